"""The Admin API (/v1/admin): an organization's keys, people, workspaces, groups and limits."""
