"""The unit of work: one session and its transaction, owned by a request or a job, and the one way
to act once it has committed.

Services only flush; the owner commits (the route class for a request, the runner for a job).
Work that must follow the commit and never precede it (dropping cache entries here and on every
replica, keeping a copy of what was written) is registered with `on_commit` and runs after a
successful commit only; a rollback forgets it.

`release()` ends the transaction before a model, tool or network call (docs/architecture.md §3): a
read-only transaction is simply committed, which returns the connection to the pool and, on SQLite,
lets writers go on. The session stays usable: its next statement begins a new transaction. The
components that make those calls release it themselves, given the owner's `release`: the
gateway (`Gateway.releasing`, which a request's `GatewayDep` is), the tool runner, the
connector runtime, the URL fetcher, the workflows' Temporal engine (`TemporalEngine.releasing`)
and the request's blob store (`ReleasingBlobStore`, `ReleasingBlobs`); a handler or a service
never has to remember to. A release stays by hand only before a wait that no component owns
(a client's upload, a conversation's turn, CPU work off the loop) or to keep what a failing
request did on purpose.

The documented exception to "the request or the job owns the transaction": code with no owner's
unit of work to join opens a short one of its own with this module's `unit_of_work`, through
`Database.transaction()`, read-only lookups included. That is code that runs beside or after
any request: background loops (the job queue, the accounting recorder, key usage, cached
limits), a conversation's turn lease, the steps of a job that calls remote services between its
writes, a CLI command, the key lookup that authenticates a request, the gateway's model lookup,
what the connector runtime learns from a server (a tool list, a refreshed token), a response
streamed after its request committed. Nothing else opens a session or commits.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

if TYPE_CHECKING:
    from maestrale.core.db import Database

AfterCommit = Callable[[], Awaitable[None] | None]
# Ends the owner's transaction before a remote call: a unit of work's `release`.
Release = Callable[[], Awaitable[None]]


class OwnerRelease:
    """What a component that calls out (the gateway, Temporal's client, a request's blob store)
    runs before each call when it is bound to the owner of a unit of work: end the owner's
    transaction, then prove that the calling task holds no connection. Calls gathered in tasks
    of their own share the owner's one session: the first ends its transaction, the others then
    find none (a session cannot commit twice at once)."""

    def __init__(self, release: Release, db: Database) -> None:
        self._release = release
        self._db = db
        self._lock = asyncio.Lock()

    async def __call__(self, what: str) -> None:
        async with self._lock:
            await self._release()
        self._db.check_released(what)


class UnitOfWork:
    def __init__(self, sessionmaker: async_sessionmaker[AsyncSession]) -> None:
        self._sessionmaker = sessionmaker
        self._session: AsyncSession | None = None
        self._after: list[AfterCommit] = []

    @property
    def session(self) -> AsyncSession:
        """The session, opened on first use (no connection is taken before a statement runs)."""
        if self._session is None:
            self._session = self._sessionmaker()
        return self._session

    @property
    def in_transaction(self) -> bool:
        return self._session is not None and self._session.in_transaction()

    def on_commit(self, action: AfterCommit) -> None:
        """Run `action` (a function, sync or async) once the transaction has committed."""
        self._after.append(action)

    async def commit(self) -> None:
        """Commit, then run the actions registered with `on_commit`, in order."""
        if self._session is not None and self._session.in_transaction():
            await self._session.commit()
        actions, self._after = self._after, []
        for action in actions:
            outcome = action()
            if inspect.isawaitable(outcome):
                await outcome

    async def rollback(self) -> None:
        """Roll back and forget the actions registered since the last commit."""
        self._after = []
        if self._session is not None and self._session.in_transaction():
            await self._session.rollback()

    async def release(self) -> None:
        """End the transaction under way (committing what it wrote) before a remote call, so
        that no connection, lock or snapshot is held while the call runs."""
        await self.commit()

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None


@asynccontextmanager
async def unit_of_work(
    sessionmaker: async_sessionmaker[AsyncSession],
) -> AsyncIterator[UnitOfWork]:
    """A unit of work that commits when the block succeeds and rolls back when it raises."""
    work = UnitOfWork(sessionmaker)
    try:
        yield work
        await work.commit()
    except BaseException:
        await work.rollback()
        raise
    finally:
        await work.close()
