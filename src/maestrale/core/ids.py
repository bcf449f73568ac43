"""Identifier helpers: UUID-like ids for resources, prefixed ids where the platform uses them."""

from __future__ import annotations

import secrets
import uuid


def new_id() -> str:
    """A random UUID (v4) string, the platform's default identifier shape."""
    return str(uuid.uuid4())


def short_token(nbytes: int = 6) -> str:
    """A short random hex token, for suffixes of generated names."""
    return secrets.token_hex(nbytes)
