"""The in-memory key cache of one replica, so that the hot path does no database read.

A verified key is trusted for `ttl` seconds, never longer: a key revoked on another replica (or
with `maestrale keys revoke`) is refused everywhere within `ttl` (1 s by default), and at once
on the replica that revoked it. A key in use is read again in the background once half of its
`ttl` has passed (`RefreshingCache`), so requests do not wait for that read. With Redis,
revocations are also published to every replica (`maestrale.core.auth.invalidation`), which
then drop the key at once. Expiry is checked on every request from the cached expiry time.
`last_used_at` is recorded in memory and written in batches by a background task.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime

from maestrale.core.auth.principal import Principal
from maestrale.core.clock import utcnow
from maestrale.core.refresh_cache import RefreshingCache

_MAX_ENTRIES = 100_000


def _not_expired(principal: Principal) -> bool:
    return principal.expires_at is None or principal.expires_at > utcnow()


class KeyCache:
    def __init__(self, ttl: float) -> None:
        self._cache: RefreshingCache[str, Principal] = RefreshingCache(
            ttl, max_entries=_MAX_ENTRIES, usable=_not_expired
        )
        self._last_used: dict[str, datetime] = {}

    @property
    def ttl(self) -> float:
        return self._cache.ttl

    @ttl.setter
    def ttl(self, value: float) -> None:
        self._cache.ttl = value

    async def lookup(
        self, key_hash: str, load: Callable[[str], Awaitable[Principal | None]]
    ) -> Principal | None:
        """The principal of a key hash: cached, or read with `load` (None: no live key)."""
        return await self._cache.get(key_hash, load)

    def get(self, key_hash: str) -> Principal | None:
        return self._cache.peek(key_hash)

    def put(self, key_hash: str, principal: Principal) -> None:
        self._cache.put(key_hash, principal)

    def invalidate_key(self, key_id: str) -> None:
        self._cache.drop_where(lambda principal: principal.key_id == key_id)

    def invalidate_workspace(self, workspace_id: str) -> None:
        """Drop every key of a workspace (archived): they are read again, and refused."""
        self._cache.drop_where(lambda principal: principal.workspace_id == workspace_id)

    def clear(self) -> None:
        self._cache.clear()

    def mark_used(self, key_id: str) -> None:
        self._last_used[key_id] = utcnow()

    def take_last_used(self) -> dict[str, datetime]:
        taken, self._last_used = self._last_used, {}
        return taken
