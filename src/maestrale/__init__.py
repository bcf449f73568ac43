"""Maestrale: an open, self-hosted AI platform server, wire-compatible with the official SDKs."""

__version__ = "0.1.0"
