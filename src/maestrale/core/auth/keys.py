"""Key material: generation (256 random bits), hashing, and the masked form shown in lists."""

from __future__ import annotations

import hashlib
import secrets

STANDARD_PREFIX = "msk_"
ADMIN_PREFIX = "msa_"


def generate_key(kind: str) -> str:
    prefix = ADMIN_PREFIX if kind == "admin" else STANDARD_PREFIX
    return prefix + secrets.token_urlsafe(32)


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def hide_key(key: str) -> str:
    """The masked form: enough to recognise a key, never enough to use it."""
    if len(key) <= 12:
        return "*" * len(key)
    return f"{key[:6]}…{key[-4:]}"
