"""UTC time helpers. Timestamps are stored timezone-aware in UTC and shown as ISO 8601 or UNIX."""

from __future__ import annotations

from datetime import UTC, datetime


def utcnow() -> datetime:
    return datetime.now(UTC)


def as_utc(value: datetime) -> datetime:
    """SQLite hands back naive datetimes; every stored datetime is UTC, so say so."""
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def unix(value: datetime) -> int:
    return int(as_utc(value).timestamp())


def iso(value: datetime | None) -> str | None:
    return None if value is None else as_utc(value).isoformat().replace("+00:00", "Z")
