"""What every decoded record shares: its owner (the workspace of the key that sent it), the
outcome of a decode (rows, and the records rejected with the first reason, which OTLP answers as
a partial success), and the checks of ids and times."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

INT64_MAX = (1 << 63) - 1
# A record's time may run ahead of the server's clock by this much (clock skew); further ahead
# it is rejected, never stored with a time no search would expect.
MAX_SKEW_NS = 24 * 3600 * 1_000_000_000
MAX_EVENTS = 128
MAX_LINKS = 128


@dataclass(frozen=True, slots=True)
class Owner:
    """Whose records these are: the workspace of the API key that sent them."""

    organization_id: str
    workspace_id: str
    user_id: str = ""
    service_account_id: str = ""

    def columns(self) -> dict[str, Any]:
        return {
            "organization_id": self.organization_id,
            "workspace_id": self.workspace_id,
            "user_id": self.user_id,
            "service_account_id": self.service_account_id,
        }


@dataclass(slots=True)
class Decoded:
    """The rows of an export request, and the records refused (with the first reason)."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    rejected: int = 0
    error: str = ""

    def reject(self, reason: str) -> None:
        self.rejected += 1
        if not self.error:
            self.error = reason


class Rejected(Exception):
    """One record is refused (the rest of its request is kept)."""


def hex_id(raw: bytes, size: int, what: str, *, optional: bool = False) -> str:
    """An id of `size` bytes as lower-case hex ('' when optional and absent); an id of another
    length, or all zeros, is refused (the OTLP specification's invalid ids)."""
    if not raw and optional:
        return ""
    if len(raw) != size:
        raise Rejected(f"{what} must be {size} bytes, not {len(raw)}")
    if not any(raw):
        raise Rejected(f"{what} is all zeros (invalid)")
    return raw.hex()


def check_time(ns: int, now_ns: int, what: str) -> int:
    if ns > min(now_ns + MAX_SKEW_NS, INT64_MAX):
        raise Rejected(f"{what} is more than a day ahead of the server's clock")
    return ns
