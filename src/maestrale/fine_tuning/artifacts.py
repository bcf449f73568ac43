"""Where fine-tuned models live: in the blob store (shared by every replica), and as local files
the engines load.

A fine-tuned model's `artifact` is `blob:<key>`; `ArtifactFiles.local` copies the blob once to a
cache directory on this machine (to a temporary name, then renamed: a reader never sees half a
file) and gives its path, which the gateway hands to the engine that serves the model's
`artifact_format` (`catalog.artifacts`). An artifact that is a plain path (a file an operator
placed) is used as it is.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import anyio

from maestrale.core.blobs import BlobStore

log = logging.getLogger("maestrale.fine_tuning")
PREFIX = "blob:"
CHUNK = 1 << 20


def blob_artifact(key: str) -> str:
    """The `artifact` value of a model kept in the blob store under `key`."""
    return PREFIX + key


def blob_key(artifact: str | None) -> str | None:
    """The blob key of an artifact kept in the blob store, else None."""
    if artifact and artifact.startswith(PREFIX):
        return artifact[len(PREFIX) :]
    return None


async def file_chunks(path: Path) -> AsyncIterator[bytes]:
    """A local file's bytes, for `BlobStore.put`."""
    async with await anyio.open_file(path, "rb") as handle:
        while chunk := await handle.read(CHUNK):
            yield chunk


async def download(blobs: BlobStore, key: str, path: Path) -> None:
    """Copy the blob `key` to `path` (temporary name first); `KeyError` if there is none."""
    await anyio.to_thread.run_sync(lambda: path.parent.mkdir(parents=True, exist_ok=True))
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.part")
    try:
        async with await anyio.open_file(tmp, "wb") as handle:
            async for chunk in blobs.get(key):
                await handle.write(chunk)
        await anyio.to_thread.run_sync(tmp.replace, path)
    finally:
        await anyio.to_thread.run_sync(lambda: tmp.unlink(missing_ok=True))


class ArtifactFiles:
    """Local copies of artifacts kept in the blob store."""

    def __init__(self, blobs: BlobStore, cache_dir: Path) -> None:
        self.blobs = blobs
        self.cache_dir = cache_dir
        self._locks: dict[str, asyncio.Lock] = {}

    async def local(self, artifact: str) -> str:
        """The local path of `artifact`, fetched from the blob store the first time."""
        key = blob_key(artifact)
        if key is None:
            return artifact
        path = self.cache_dir / key
        lock = self._locks.setdefault(key, asyncio.Lock())
        async with lock:
            if not await anyio.to_thread.run_sync(path.is_file):
                await download(self.blobs, key, path)
        return str(path)

    async def forget(self, artifact: str | None) -> None:
        """Remove the local copy and the blob of a deleted model (a failure leaves litter only)."""
        key = blob_key(artifact)
        if key is None:
            return
        path = self.cache_dir / key
        try:
            await anyio.to_thread.run_sync(lambda: path.unlink(missing_ok=True))
            await self.blobs.delete(key)
        except Exception:
            log.warning("could not remove the artifact %s", key, exc_info=True)
