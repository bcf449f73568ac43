"""Background work of files: removing a file when its expiry passes."""

from __future__ import annotations

from functools import partial
from typing import Any

from maestrale.core.blobs import BlobStore
from maestrale.core.jobs.worker import JobContext, JobRegistry
from maestrale.files.repository import WorkspaceFiles
from maestrale.files.service import EXPIRE_KIND


class FileTasks:
    def __init__(self, blobs: BlobStore) -> None:
        self.blobs = blobs

    async def expire(self, ctx: JobContext) -> dict[str, Any]:
        """Delete the file (row, then blob) if its expiry has passed; it may be gone already. The
        file is looked up in the job's workspace only."""
        file_id = str(ctx.payload["file_id"])
        async with ctx.db.transaction() as work:
            key = await WorkspaceFiles(work.session, ctx.tenant).remove_expired(file_id)
            if key is not None:
                work.on_commit(partial(self._remove_blob, key))
        return {"deleted": key is not None}

    async def _remove_blob(self, key: str) -> None:
        await self.blobs.delete(key)


def register(registry: JobRegistry, blobs: BlobStore) -> None:
    registry.register(EXPIRE_KIND, FileTasks(blobs).expire)
