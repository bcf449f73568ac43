"""Tenancy and authentication: organizations, workspaces, users, hashed API keys."""
