"""The tokens of a connector credential, as the token endpoint granted them."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any


@dataclass(frozen=True, slots=True)
class Tokens:
    """An access token and what comes with it. The tokens stay out of `repr` so that a logged
    object or a traceback's locals do not print them."""

    access_token: str = field(repr=False)
    token_type: str
    refresh_token: str | None = field(repr=False)
    expires_at: datetime | None
    scope: str | None

    def expires_within(self, seconds: float, *, now: datetime | None = None) -> bool:
        """Whether the access token expires in the next `seconds` (refresh it before use);
        never for a token the server gave no lifetime."""
        if self.expires_at is None:
            return False
        return self.expires_at - timedelta(seconds=seconds) <= (now or datetime.now(UTC))

    def as_json(self) -> dict[str, Any]:
        """A JSON-able dict, to seal (`SecretBox.seal_json`) and store."""
        return {
            "access_token": self.access_token,
            "token_type": self.token_type,
            "refresh_token": self.refresh_token,
            "expires_at": self.expires_at.isoformat() if self.expires_at else None,
            "scope": self.scope,
        }

    @classmethod
    def from_json(cls, data: Any) -> Tokens:
        """The Tokens `as_json` gave; ValueError on anything else."""
        if not isinstance(data, dict):
            raise ValueError("stored tokens are not an object")
        access, kind = data.get("access_token"), data.get("token_type")
        refresh, expires, scope = (
            data.get("refresh_token"),
            data.get("expires_at"),
            data.get("scope"),
        )
        if not isinstance(access, str) or not isinstance(kind, str):
            raise ValueError("stored tokens have no access token")
        if not all(v is None or isinstance(v, str) for v in (refresh, expires, scope)):
            raise ValueError("stored tokens have a field of the wrong type")
        try:
            expires_at = datetime.fromisoformat(expires) if expires else None
        except ValueError:
            raise ValueError("stored tokens have an unreadable expiry") from None
        if expires_at is not None and expires_at.tzinfo is None:
            raise ValueError("stored tokens have an expiry without a time zone")
        return cls(access, kind, refresh, expires_at, scope)
