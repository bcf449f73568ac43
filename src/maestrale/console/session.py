"""Console sessions: what a sign-in creates, and what each console request opens.

The browser holds only a random token (32 bytes) in an HttpOnly, SameSite=Strict cookie; the
row is found by the token's SHA-256 and holds the keys sealed at rest (`services.secrets`), the
CSRF token the pages send back in a header, and an expiry. Neither key ever reaches the browser
after the sign-in form, nor a URL, nor a log line (the dataclasses below leave them out of repr).
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from starlette.requests import HTTPConnection

from maestrale.config import Settings
from maestrale.console.repository import ConsoleSessionRepository
from maestrale.console.tables import ConsoleSession
from maestrale.core.app_services import app_services
from maestrale.core.clock import utcnow
from maestrale.core.crypto import SecretBox, SecretUnreadable
from maestrale.core.db import Database

COOKIE = "maestrale_console"
COOKIE_PATH = "/console"
_API_KEY = "console_sessions.api_key"
_ADMIN_KEY = "console_sessions.admin_key"
# last_seen_at is written at most this often: not a write per proxied request.
_TOUCH_EVERY = timedelta(minutes=1)


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class OpenSession:
    id: str
    csrf_token: str = field(repr=False)
    expires_at: datetime
    api_key: str = field(repr=False)
    admin_key: str | None = field(repr=False)

    @property
    def is_admin(self) -> bool:
        return self.admin_key is not None

    def csrf_matches(self, candidate: str | None) -> bool:
        return candidate is not None and secrets.compare_digest(
            candidate.encode(), self.csrf_token.encode()
        )


@dataclass(frozen=True, slots=True)
class NewSession:
    token: str = field(repr=False)  # for the cookie, and nowhere else
    session: OpenSession


class SessionStore:
    """Creates, opens and deletes console sessions."""

    def __init__(self, db: Database, box: SecretBox, hours: float) -> None:
        self.db = db
        self.box = box
        self.lifetime = timedelta(hours=hours)

    async def create(
        self, api_key: str, admin_key: str | None, replacing: str | None = None
    ) -> NewSession:
        """A new session (a new token: never the one the browser had, which `replacing`, the
        token of its current cookie, ends)."""
        token = secrets.token_urlsafe(32)
        now = utcnow()
        row = ConsoleSession(
            id=token_hash(token),
            api_key=self.box.seal(api_key.encode(), _API_KEY),
            admin_key=self.box.seal(admin_key.encode(), _ADMIN_KEY) if admin_key else None,
            csrf_token=secrets.token_urlsafe(32),
            created_at=now,
            expires_at=now + self.lifetime,
            last_seen_at=now,
        )
        async with self.db.transaction() as work:
            repository = ConsoleSessionRepository(work.session)
            await repository.delete_expired(now)  # sign-ins sweep the ended sessions
            if replacing:
                await repository.delete(token_hash(replacing))
            await repository.add(row)
        opened = OpenSession(row.id, row.csrf_token, row.expires_at, api_key, admin_key or None)
        return NewSession(token, opened)

    async def open(self, token: str | None) -> OpenSession | None:
        """The live session of a cookie's token; None when there is none, it has expired, or its
        keys no longer open (the server secret changed): each means signing in again."""
        if not token or len(token) > 200:
            return None
        session_id = token_hash(token)
        now = utcnow()
        async with self.db.transaction() as work:
            row = await ConsoleSessionRepository(work.session).get(session_id)
        if row is None:
            return None
        if row.expires_at <= now:
            await self.delete(session_id)
            return None
        try:
            api_key = self.box.open(row.api_key, _API_KEY).decode()
            admin_key = self.box.open(row.admin_key, _ADMIN_KEY).decode() if row.admin_key else None
        except SecretUnreadable:
            await self.delete(session_id)
            return None
        if now - row.last_seen_at >= _TOUCH_EVERY:
            async with self.db.transaction() as work:
                await ConsoleSessionRepository(work.session).touch(session_id, now)
        return OpenSession(row.id, row.csrf_token, row.expires_at, api_key, admin_key)

    async def delete(self, session_id: str) -> None:
        async with self.db.transaction() as work:
            await ConsoleSessionRepository(work.session).delete(session_id)


def store_of(connection: HTTPConnection) -> SessionStore:
    """The session store of the app serving `connection` (cheap: it holds no state of its
    own)."""
    db: Database = app_services(connection).db
    box: SecretBox = app_services(connection).secrets
    settings: Settings = app_services(connection).settings
    return SessionStore(db, box, settings.console_session_hours)
