"""The in-memory key cache of one replica, so that the hot path does no database read.

A verified key is trusted for `ttl` seconds, then read again: a key revoked on another replica
(or with `maestrale keys revoke`) is refused everywhere within `ttl` (1 s by default), and at
once on the replica that revoked it. With Redis, revocations are also published to every replica
(`maestrale.core.auth.invalidation`), which then drop the key at once. Expiry is checked on
every request from the cached expiry time. `last_used_at` is recorded in memory and written in
batches by a background task.
"""

from __future__ import annotations

import time
from datetime import datetime

from maestrale.core.auth.principal import Principal
from maestrale.core.clock import utcnow

_MAX_ENTRIES = 100_000


class KeyCache:
    def __init__(self, ttl: float) -> None:
        self.ttl = ttl
        self._entries: dict[str, tuple[Principal, float]] = {}
        self._last_used: dict[str, datetime] = {}

    def get(self, key_hash: str) -> Principal | None:
        entry = self._entries.get(key_hash)
        if entry is None:
            return None
        principal, fetched = entry
        if time.monotonic() - fetched > self.ttl:
            del self._entries[key_hash]
            return None
        if principal.expires_at is not None and principal.expires_at <= utcnow():
            del self._entries[key_hash]
            return None
        return principal

    def put(self, key_hash: str, principal: Principal) -> None:
        if self.ttl <= 0:
            return
        if len(self._entries) >= _MAX_ENTRIES:
            self._entries.clear()  # bounded memory beats an LRU's bookkeeping on the hot path
        self._entries[key_hash] = (principal, time.monotonic())

    def invalidate_key(self, key_id: str) -> None:
        for key_hash, (principal, _) in list(self._entries.items()):
            if principal.key_id == key_id:
                del self._entries[key_hash]

    def invalidate_workspace(self, workspace_id: str) -> None:
        """Drop every key of a workspace (archived): they are read again, and refused."""
        for key_hash, (principal, _) in list(self._entries.items()):
            if principal.workspace_id == workspace_id:
                del self._entries[key_hash]

    def clear(self) -> None:
        self._entries.clear()

    def mark_used(self, key_id: str) -> None:
        self._last_used[key_id] = utcnow()

    def take_last_used(self) -> dict[str, datetime]:
        taken, self._last_used = self._last_used, {}
        return taken
