"""Service accounts: non-human principals of a workspace with roles and API keys of their own."""
