"""Guardrails: moderation checks of a request's input before the model sees it."""
