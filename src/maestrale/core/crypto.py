"""Secrets at rest: AES-256-GCM under keys derived from the server secret, rotatable.

A sealed value is `v1.<key id>.<nonce + ciphertext + tag, base64url>`. The key is HKDF-SHA256 of
the server secret (`MAESTRALE_SECRET_KEY`, else the one generated into the data dir); its id is
the first 8 hex digits of its SHA-256, so a value names the key that sealed it. Rotation: set the
new secret and keep the old one in `MAESTRALE_PREVIOUS_SECRET_KEYS`; values sealed under an old
key still open, every write seals under the new one, and `maestrale secrets reseal` rewrites the
rest so that the old key can be dropped. The purpose (a table and column) is bound in as
associated data: a value copied into another column or row kind does not open.
"""

from __future__ import annotations

import base64
import hashlib
import os
from collections.abc import Iterable
from typing import Any

import orjson
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

VERSION = "v1"
_INFO = b"maestrale/secrets-at-rest/v1"
_NONCE = 12


class SecretUnreadable(Exception):
    """A sealed value no configured key opens (its key was dropped, or the value was altered)."""


def _derive(secret: bytes) -> bytes:
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=_INFO).derive(secret)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class SecretBox:
    """Seals and opens secrets with the current key; opens with the previous ones too."""

    def __init__(self, secret: bytes, previous: Iterable[bytes] = ()) -> None:
        keys = [_derive(secret), *(_derive(s) for s in previous)]
        self._current = self.key_id(keys[0])
        self._keys = {self.key_id(k): AESGCM(k) for k in reversed(keys)}

    @staticmethod
    def key_id(key: bytes) -> str:
        return hashlib.sha256(key).hexdigest()[:8]

    @property
    def current_key_id(self) -> str:
        return self._current

    def seal(self, plaintext: bytes, purpose: str) -> str:
        nonce = os.urandom(_NONCE)
        sealed = self._keys[self._current].encrypt(nonce, plaintext, purpose.encode())
        return f"{VERSION}.{self._current}.{_b64(nonce + sealed)}"

    def open(self, value: str, purpose: str) -> bytes:
        try:
            version, key_id, body = value.split(".", 2)
            aead = self._keys[key_id] if version == VERSION else None
            data = _unb64(body)
        except (ValueError, KeyError):
            aead = None
        if aead is None:
            raise SecretUnreadable(f"a sealed {purpose} is not readable with the configured keys")
        try:
            return aead.decrypt(data[:_NONCE], data[_NONCE:], purpose.encode())
        except InvalidTag:
            raise SecretUnreadable(f"a sealed {purpose} failed its integrity check") from None

    def is_current(self, value: str) -> bool:
        """Whether `value` is sealed under the current key (else `reseal` rewrites it)."""
        return value.startswith(f"{VERSION}.{self._current}.")

    def seal_json(self, value: Any, purpose: str) -> str:
        return self.seal(orjson.dumps(value), purpose)

    def open_json(self, value: str, purpose: str) -> Any:
        return orjson.loads(self.open(value, purpose))
