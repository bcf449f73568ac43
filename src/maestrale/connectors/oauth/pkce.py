"""PKCE (RFC 7636) with the S256 method only: `plain` would hand the verifier to anyone who
reads the authorization URL, which travels through the user's browser."""

from __future__ import annotations

import base64
import hashlib
import re
import secrets

# RFC 7636 §4.1: 43 to 128 characters of the unreserved set.
_VERIFIER = re.compile(r"[A-Za-z0-9\-._~]{43,128}")


def new_verifier() -> str:
    """A fresh code verifier: 64 URL-safe characters, 384 bits of randomness."""
    return secrets.token_urlsafe(48)


def challenge(verifier: str) -> str:
    """The S256 code challenge of `verifier`: BASE64URL(SHA256(verifier)), unpadded."""
    if not _VERIFIER.fullmatch(verifier):
        raise ValueError("a PKCE verifier is 43 to 128 characters of [A-Za-z0-9-._~]")
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).decode("ascii").rstrip("=")
