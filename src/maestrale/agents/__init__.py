"""Agents (beta): versioned agent configurations with aliases."""
