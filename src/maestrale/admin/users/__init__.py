"""Members of the organization, invitations and the role catalog (/v1/admin/users,
/v1/admin/users-invite, /v1/admin/roles)."""
