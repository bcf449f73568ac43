"""The server secret and HMAC signatures made with it (signed download links).

The secret is the configured one, else a random one generated at first start and kept in the data
dir (mode 0600), so that links stay valid across restarts. Replicas behind one load balancer must
share it: configure it explicitly there. It is never logged.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import secrets
from pathlib import Path

SECRET_FILE = "secret-key"


def load_or_create_secret(data_dir: Path, configured: str | None = None) -> bytes:
    """The configured secret, or the one stored in `data_dir`, created there if absent."""
    if configured:
        return configured.encode()
    path = data_dir / SECRET_FILE
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        value = path.read_text().strip()
        if not value:
            raise RuntimeError(f"{path} is empty: remove it to generate a new secret") from None
        return value.encode()
    value = secrets.token_urlsafe(48)
    with os.fdopen(fd, "w") as fh:
        fh.write(value + "\n")
    return value.encode()


def sign(secret: bytes, message: str) -> str:
    """URL-safe HMAC-SHA256 of `message`."""
    digest = hmac.new(secret, message.encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).decode().rstrip("=")


def verify(secret: bytes, message: str, signature: str) -> bool:
    """Whether `signature` is `sign(secret, message)`, compared in constant time (a signature
    that is not ASCII cannot be one, and `compare_digest` refuses to compare it)."""
    return signature.isascii() and hmac.compare_digest(sign(secret, message), signature)
