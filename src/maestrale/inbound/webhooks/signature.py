"""Verifying a delivery: the provider's signature over its payload, in constant time, and the
freshness of its timestamp; reading its event type and event id. Pure functions of a webhook's
settings and the request, so that the receiving path runs them without the database."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import re2

from maestrale.core.regex import compile_pattern

# Signatures read from one header (Stripe sends one per secret while it rolls them).
MAX_CANDIDATES = 8
MAX_TEXT = 256
# A timestamp past this is in milliseconds (1e11 s is in the year 5138).
_MILLISECONDS = 10**11
_PLACEHOLDER = re.compile(r"\{(body|timestamp)\}")
_DIGESTS = {"sha256": hashlib.sha256, "sha1": hashlib.sha1}


@dataclass(frozen=True, slots=True)
class Verifier:
    """A webhook's signature scheme, compiled once (header names lower case, as ASGI has
    them)."""

    secret: bytes
    algorithm: str
    encoding: str
    header: str
    signature_regex: re2._Regexp | None
    timestamp_header: str | None
    timestamp_regex: re2._Regexp | None
    payload_pattern: str
    validity: int | None

    @classmethod
    def build(
        cls,
        secret: bytes,
        *,
        algorithm: str | None,
        encoding: str | None,
        header: str,
        signature_regex: str | None,
        timestamp_header: str | None,
        timestamp_regex: str | None,
        payload_pattern: str | None,
        validity: int | None,
    ) -> Verifier:
        return cls(
            secret=secret,
            algorithm=algorithm or "sha256",
            encoding=encoding or "hex",
            header=header.lower(),
            signature_regex=compile_pattern(signature_regex) if signature_regex else None,
            timestamp_header=timestamp_header.lower() if timestamp_header else None,
            timestamp_regex=compile_pattern(timestamp_regex) if timestamp_regex else None,
            payload_pattern=payload_pattern or "{body}",
            validity=validity,
        )


@dataclass(frozen=True, slots=True)
class Verdict:
    """`refusal` is None when the delivery is authentic and fresh; `digest` is the signature
    that matched (the replay key of its payload)."""

    refusal: str | None
    message: str
    digest: bytes = b""


def _value(regex: re2._Regexp, match: Any) -> str:
    return str(match.group(1) if regex.groups else match.group(0))


def _decode(candidate: str, encoding: str) -> bytes | None:
    try:
        if encoding == "hex":
            return bytes.fromhex(candidate.strip())
        return base64.b64decode(candidate.strip(), validate=True)
    except (ValueError, binascii.Error):
        return None


def _timestamp(verifier: Verifier, headers: Mapping[str, str], signature: str) -> str | None:
    if verifier.timestamp_header is not None:
        source = headers.get(verifier.timestamp_header)
    else:
        source = signature if verifier.timestamp_regex is not None else None
    if source is None:
        return None
    if verifier.timestamp_regex is not None:
        found = verifier.timestamp_regex.search(source)
        return None if found is None else _value(verifier.timestamp_regex, found).strip()
    return source.strip()


def _payload(pattern: str, body: bytes, timestamp: str | None) -> bytes:
    parts = _PLACEHOLDER.split(pattern)
    out = bytearray()
    # split() alternates literal text and placeholder names.
    for index, part in enumerate(parts):
        if index % 2 == 0:
            out += part.encode()
        elif part == "body":
            out += body
        else:
            out += (timestamp or "").encode()
    return bytes(out)


def verify(verifier: Verifier, headers: Mapping[str, str], body: bytes, now: float) -> Verdict:
    """Check the delivery's signature (any of the header's signatures, each compared in
    constant time), then the age of its timestamp."""
    signature = headers.get(verifier.header)
    if signature is None:
        return Verdict("bad_signature", f"the {verifier.header} header is missing")
    if verifier.signature_regex is not None:
        regex = verifier.signature_regex
        candidates = [_value(regex, m) for m in regex.finditer(signature)][:MAX_CANDIDATES]
    else:
        candidates = [signature]
    needs_timestamp = "{timestamp}" in verifier.payload_pattern or verifier.validity is not None
    timestamp = _timestamp(verifier, headers, signature)
    if needs_timestamp and not timestamp:
        return Verdict("bad_signature", "the delivery carries no timestamp")
    mac = hmac.new(
        verifier.secret,
        _payload(verifier.payload_pattern, body, timestamp),
        _DIGESTS[verifier.algorithm],
    ).digest()
    matched = False
    for candidate in candidates:
        decoded = _decode(candidate, verifier.encoding)
        # compare_digest over every candidate: the time does not tell which one was close.
        matched |= decoded is not None and hmac.compare_digest(decoded, mac)
    if not matched:
        return Verdict("bad_signature", "the signature does not match the delivery")
    if verifier.validity is not None:
        if (
            timestamp is None
            or not timestamp.isascii()
            or not timestamp.isdigit()
            or len(timestamp) > 16
        ):
            return Verdict("stale", "the delivery's timestamp is not a number of seconds")
        seconds = int(timestamp)
        if seconds > _MILLISECONDS:
            seconds //= 1000
        if abs(now - seconds) > verifier.validity:
            return Verdict(
                "stale", f"the delivery's timestamp is more than {verifier.validity} s away"
            )
    return Verdict(None, "verified", mac)


def clean(text: str, limit: int = MAX_TEXT) -> str:
    """Text that every database stores: no NUL, no lone surrogate, at most `limit` characters."""
    text = text[:limit].replace("\x00", "\ufffd")
    return text.encode("utf-8", "replace").decode("utf-8")


def _scalar(value: Any) -> str | None:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return None
    return clean(str(value))


def field_at(path: str | None, headers: Mapping[str, str], body: Any) -> str | None:
    """The value at `body.a.b` (a key path into the JSON body) or `headers.Name`, as text; None
    when it is absent or not a scalar."""
    if not path:
        return None
    source, _, rest = path.partition(".")
    if source == "headers":
        value = headers.get(rest.lower())
        return None if value is None else clean(value)
    node = body
    for key in rest.split("."):
        if not isinstance(node, dict):
            return None
        node = node.get(key)
    return _scalar(node)


def event_id_of(header: str | None, headers: Mapping[str, str], body: Any) -> str | None:
    """The delivery's id: the provider's id header, else `body.id` or `body.event_id`."""
    if header is not None and (value := headers.get(header.lower())):
        return clean(value)
    if isinstance(body, dict):
        for key in ("id", "event_id"):
            if (found := _scalar(body.get(key))) is not None:
                return found
    return None
