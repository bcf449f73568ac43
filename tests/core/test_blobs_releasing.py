"""A request's blob store (`ReleasingBlobStore`) ends the request's transaction before each read
or write, and again before each chunk of a write reaches the store (its chunks may come from
the database); a delete ends nothing (it undoes a failed write, where committing would keep
what failed). The tests' strict database refuses a call made with a connection held."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import sqlalchemy as sa

from maestrale.core.blobs import BlobStore, LocalBlobStore, ReleasingBlobStore
from maestrale.core.db import Database
from maestrale.core.uow import UnitOfWork


class Watched(LocalBlobStore):
    """A local store that checks, as each chunk arrives and once they run out, that no
    connection is held (as a remote store's calls do)."""

    def __init__(self, root: Path, db: Database) -> None:
        super().__init__(root)
        self.db = db

    async def put(
        self, key: str, chunks: AsyncIterator[bytes], *, max_bytes: int | None = None
    ) -> int:
        async def checked() -> AsyncIterator[bytes]:
            async for chunk in chunks:
                self.db.check_released("a part sent to the store")
                yield chunk
            self.db.check_released("the end of an upload")

        return await super().put(key, checked(), max_bytes=max_bytes)


async def _rows_as_chunks(work: UnitOfWork, count: int) -> AsyncIterator[bytes]:
    """Chunks read from the database as they are written, with one last read after them."""
    for i in range(count):
        await work.session.execute(sa.text("SELECT 1"))
        yield f"line {i}\n".encode()
    await work.session.execute(sa.text("SELECT 1"))


async def test_reads_and_writes_end_the_transaction_first(db: Database, tmp_path: Path) -> None:
    committed: list[str] = []
    async with db.transaction() as work:
        blobs = ReleasingBlobStore(Watched(tmp_path, db), work.release, db)
        assert isinstance(blobs, BlobStore)
        work.on_commit(lambda: committed.append("read"))
        await work.session.execute(sa.text("SELECT 1"))
        assert await blobs.put("ws/a", _rows_as_chunks(work, 3)) == 21
        assert not work.in_transaction and not db.holds_connection()
        assert committed == ["read"]
        await work.session.execute(sa.text("SELECT 1"))
        assert await blobs.size("ws/a") == 21
        assert not work.in_transaction
        await work.session.execute(sa.text("SELECT 1"))
        assert b"".join([c async for c in blobs.get("ws/a", start=5)]) == b"0\nline 1\nline 2\n"
        assert not work.in_transaction


async def test_a_delete_leaves_the_transaction_open(db: Database, tmp_path: Path) -> None:
    store = LocalBlobStore(tmp_path)
    async with db.transaction() as work:
        blobs = ReleasingBlobStore(store, work.release, db)
        await blobs.put("ws/a", _rows_as_chunks(work, 1))
        await work.session.execute(sa.text("SELECT 1"))
        assert await blobs.delete("ws/a") is True
        assert work.in_transaction
    assert await store.size("ws/a") is None
