"""Workspace API keys of the organization (/v1/admin/api-keys)."""
