"""Workspaces of the organization and their members (/v1/admin/workspaces)."""
