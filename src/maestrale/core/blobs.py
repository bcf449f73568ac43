"""Blob storage behind one small interface: a local directory now, S3-compatible storage later.

Blobs are written from async byte streams in chunks and never held whole in memory. A request
reads and writes them through `ReleasingBlobStore`, which ends its transaction first.
"""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import anyio

from maestrale.core.paths import private_dir
from maestrale.core.uow import OwnerRelease

if TYPE_CHECKING:
    from maestrale.core.db import Database
    from maestrale.core.uow import Release

CHUNK = 1024 * 1024
_SAFE_KEY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/-]{0,511}$")


class BlobTooLarge(Exception):
    def __init__(self, limit: int) -> None:
        super().__init__(f"blob exceeds {limit} bytes")
        self.limit = limit


@runtime_checkable
class BlobStore(Protocol):
    async def put(
        self, key: str, chunks: AsyncIterator[bytes], *, max_bytes: int | None = None
    ) -> int:
        """Store the stream under `key` atomically; return its size. Over `max_bytes` →
        `BlobTooLarge`, and nothing is stored."""
        ...

    def get(self, key: str, *, start: int = 0, end: int | None = None) -> AsyncIterator[bytes]:
        """Stream the blob's bytes from `start` to `end` (exclusive); `KeyError` if absent."""
        ...

    async def size(self, key: str) -> int | None:
        """The blob's size, or None if it does not exist."""
        ...

    async def delete(self, key: str) -> bool:
        """Remove the blob; False if it did not exist."""
        ...


def check_key(key: str) -> str:
    if not _SAFE_KEY.match(key) or ".." in key.split("/"):
        raise ValueError(f"invalid blob key: {key!r}")
    return key


class LocalBlobStore:
    """Blobs as files under one directory, written to a temporary name and renamed into place."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        private_dir(self.root, "blob directory")

    def _path(self, key: str) -> Path:
        return self.root / check_key(key)

    async def put(
        self, key: str, chunks: AsyncIterator[bytes], *, max_bytes: int | None = None
    ) -> int:
        path = self._path(key)
        await anyio.to_thread.run_sync(lambda: path.parent.mkdir(parents=True, exist_ok=True))
        tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.part")
        size = 0
        try:
            async with await anyio.open_file(tmp, "wb") as fh:
                async for chunk in chunks:
                    size += len(chunk)
                    if max_bytes is not None and size > max_bytes:
                        raise BlobTooLarge(max_bytes)
                    await fh.write(chunk)
            await anyio.to_thread.run_sync(os.replace, tmp, path)
        except BaseException:
            await anyio.to_thread.run_sync(lambda: tmp.unlink(missing_ok=True))
            raise
        return size

    async def get(
        self, key: str, *, start: int = 0, end: int | None = None
    ) -> AsyncIterator[bytes]:
        path = self._path(key)
        try:
            fh = await anyio.open_file(path, "rb")
        except FileNotFoundError as exc:
            raise KeyError(key) from exc
        async with fh:
            await fh.seek(start)
            remaining = None if end is None else max(0, end - start)
            while remaining is None or remaining > 0:
                chunk = await fh.read(CHUNK if remaining is None else min(CHUNK, remaining))
                if not chunk:
                    break
                if remaining is not None:
                    remaining -= len(chunk)
                yield chunk

    async def size(self, key: str) -> int | None:
        path = self._path(key)
        try:
            return (await anyio.to_thread.run_sync(path.stat)).st_size
        except FileNotFoundError:
            return None

    async def delete(self, key: str) -> bool:
        path = self._path(key)
        try:
            await anyio.to_thread.run_sync(path.unlink)
        except FileNotFoundError:
            return False
        return True


class ReleasingBlobStore:
    """A blob store for the owner of a unit of work (a request): before each read or write it
    ends the owner's transaction (`release`), so that none is open while the store answers
    (docs/architecture.md §3), and no caller has to remember to.

    A write's chunks may come from the database (an export reads its rows as it writes them):
    the transaction is ended again before each chunk reaches the store, and once they run out.
    `delete` ends nothing: it undoes a failed write in an `except` block, where committing
    would keep what failed, or runs once the owner has committed (`on_commit`)."""

    def __init__(self, store: BlobStore, release: Release, db: Database) -> None:
        self.store = store
        self.release = OwnerRelease(release, db)

    async def _release_owner(self) -> None:
        await self.release("a call to the blob store")

    async def _released(self, chunks: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
        async for chunk in chunks:
            await self._release_owner()
            yield chunk
        await self._release_owner()

    async def put(
        self, key: str, chunks: AsyncIterator[bytes], *, max_bytes: int | None = None
    ) -> int:
        await self._release_owner()
        return await self.store.put(key, self._released(chunks), max_bytes=max_bytes)

    async def get(
        self, key: str, *, start: int = 0, end: int | None = None
    ) -> AsyncIterator[bytes]:
        await self._release_owner()
        chunks = self.store.get(key, start=start, end=end)
        try:
            async for chunk in chunks:
                yield chunk
        finally:
            # Closed with this reader (its file or its response), not when collected.
            close = getattr(chunks, "aclose", None)
            if close is not None:
                await close()

    async def size(self, key: str) -> int | None:
        await self._release_owner()
        return await self.store.size(key)

    async def delete(self, key: str) -> bool:
        return await self.store.delete(key)
