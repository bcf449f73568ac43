"""The lease on a conversation's turn: what keeps two appends to one conversation from
interleaving without holding a transaction while the model runs (docs/architecture.md §3).

An append takes the conversation's turn in one short statement (a lease: an owner and an expiry
on the conversation's row), runs its model with no connection open, renews the lease meanwhile,
and writes its entries in one short transaction that gives the turn back, provided its lease
still holds and the conversation still has the entries it read. A second append to the same
conversation waits its turn (polling, on any replica), up to `wait_seconds`; then it gets 409
`conversation_busy`. Should its lease be lost all the same (a model call that outlived it while
renewals failed), its write is refused with 409 `conversation_changed` and nothing is stored.
A crashed process's turn is free again once its lease has run out.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import timedelta

from maestrale.conversations.repository import ConversationRepository, TurnRow
from maestrale.core.auth.principal import Tenant
from maestrale.core.clock import utcnow
from maestrale.core.db import Database
from maestrale.core.errors import Conflict, NotFound

log = logging.getLogger("maestrale.conversations")

FIRST_POLL_SECONDS = 0.01
MAX_POLL_SECONDS = 0.25


class ConversationBusy(Conflict):
    code = "conversation_busy"


class ConversationChanged(Conflict):
    code = "conversation_changed"


class ConversationNotFound(NotFound):
    code = "conversation_not_found"


@dataclass(frozen=True, slots=True)
class TurnLeasePolicy:
    """How long a turn's lease lasts unrenewed, and how long an append waits for a turn."""

    lease_seconds: float = 30.0
    wait_seconds: float = 120.0


@dataclass(slots=True)
class TurnLease:
    """A conversation's turn held: its owner token and the conversation's row as it was when
    taken."""

    owner: str
    row: TurnRow
    lost: bool = False  # a renewal found the lease taken over
    given_back: bool = False  # the final write gave the turn back


class TurnLeases:
    """Takes, renews and gives back the leases on the turns of one tenant's conversations."""

    def __init__(self, db: Database, tenant: Tenant, policy: TurnLeasePolicy) -> None:
        self.db, self.tenant, self.policy = db, tenant, policy

    async def _try(self, conversation_id: str, owner: str) -> TurnRow | None:
        now = utcnow()
        async with self.db.transaction() as work:
            repo = ConversationRepository(work.session, self.tenant)
            expires = now + timedelta(seconds=self.policy.lease_seconds)
            row = await repo.claim_turn(conversation_id, owner, now, expires)
            if row is None and await repo.get(conversation_id) is None:
                raise ConversationNotFound(
                    f"conversation {conversation_id!r} not found", param="conversation_id"
                )
            return row

    async def _claim(self, conversation_id: str) -> TurnLease:
        owner = uuid.uuid4().hex
        deadline = time.monotonic() + self.policy.wait_seconds
        pause = FIRST_POLL_SECONDS
        while (row := await self._try(conversation_id, owner)) is None:
            if time.monotonic() + pause > deadline:
                raise ConversationBusy(
                    f"conversation {conversation_id!r} is answering another request: retry "
                    "when it has finished",
                    param="conversation_id",
                )
            await asyncio.sleep(pause)
            pause = min(pause * 2, MAX_POLL_SECONDS)
        return TurnLease(owner, row)

    async def _renew(self, lease: TurnLease) -> None:
        """Extend the lease every third of its length while the turn runs."""
        while True:
            await asyncio.sleep(self.policy.lease_seconds / 3)
            expires = utcnow() + timedelta(seconds=self.policy.lease_seconds)
            try:
                async with self.db.transaction() as work:
                    repo = ConversationRepository(work.session, self.tenant)
                    held = await repo.renew_turn(lease.row.id, lease.owner, expires)
            except Exception:
                log.warning("could not renew the turn of conversation %s", lease.row.id)
                continue
            if not held:
                lease.lost = True
                return

    async def _give_back(self, lease: TurnLease) -> None:
        with contextlib.suppress(Exception):
            async with self.db.transaction() as work:
                await ConversationRepository(work.session, self.tenant).release_turn(
                    lease.row.id, lease.owner
                )

    @asynccontextmanager
    async def hold(self, conversation_id: str) -> AsyncIterator[TurnLease]:
        """Hold the conversation's turn while the block runs. The block's final write gives it
        back (`ConversationRepository.add_entries` with the owner); a block that fails or is
        cancelled gives it back here."""
        lease = await self._claim(conversation_id)
        renewal = asyncio.create_task(self._renew(lease), name="conversation-turn")
        try:
            yield lease
        finally:
            renewal.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await renewal
            if not lease.given_back:
                await asyncio.shield(self._give_back(lease))
