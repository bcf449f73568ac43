"""Secrets at rest (`core.crypto`): AES-GCM under keys derived from the server secret, bound to
their purpose, rotatable."""

from __future__ import annotations

import pytest

from maestrale.core.crypto import SecretBox, SecretUnreadable


def test_seal_and_open() -> None:
    box = SecretBox(b"secret-a")
    sealed = box.seal(b"token-123", "purpose")
    assert b"token-123" not in sealed.encode() and sealed.startswith("v1.")
    assert box.open(sealed, "purpose") == b"token-123"
    assert box.seal(b"token-123", "purpose") != sealed  # a fresh nonce every time
    assert box.open_json(box.seal_json({"a": [1]}, "p"), "p") == {"a": [1]}


def test_purpose_key_and_integrity_are_checked() -> None:
    box = SecretBox(b"secret-a")
    sealed = box.seal(b"token", "headers")
    with pytest.raises(SecretUnreadable):
        box.open(sealed, "credential")  # copied into another column: refused
    with pytest.raises(SecretUnreadable):
        SecretBox(b"secret-b").open(sealed, "headers")
    flipped = sealed[:-2] + ("A" if sealed[-2] != "A" else "B") + sealed[-1]
    for bad in (flipped, "v1.nokey.abc", "v2.x.y", "garbage", ""):
        with pytest.raises(SecretUnreadable):
            box.open(bad, "headers")


def test_rotation_keeps_old_values_readable() -> None:
    old = SecretBox(b"secret-a")
    sealed = old.seal(b"token", "p")
    rotated = SecretBox(b"secret-b", [b"secret-a"])
    assert rotated.open(sealed, "p") == b"token"
    assert not rotated.is_current(sealed)
    resealed = rotated.seal(rotated.open(sealed, "p"), "p")
    assert rotated.is_current(resealed) and SecretBox(b"secret-b").open(resealed, "p") == b"token"
