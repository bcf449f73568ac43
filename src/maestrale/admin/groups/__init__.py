"""User groups, their members and workspace assignments (/v1/admin/user-groups)."""
