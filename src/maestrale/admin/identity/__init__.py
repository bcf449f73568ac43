"""Who a key belongs to: /v1/users/me (and its organizations and workspaces), /v1/whoami."""
