"""Prompts and skills: versioned, workspace-scoped registries (`/v2/prompts`, `/v2/skills`),
and what agents, conversations and responses read of them (`lookup`, `render`)."""
