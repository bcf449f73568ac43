"""Conversations (beta): stateful exchanges with a model or an agent, entry by entry."""
