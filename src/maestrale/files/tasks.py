"""Background work of files: removing a file when its expiry passes."""

from __future__ import annotations

from typing import Any

from maestrale.core.blobs import BlobStore
from maestrale.core.clock import utcnow
from maestrale.core.jobs.worker import JobContext, JobRegistry
from maestrale.files.service import EXPIRE_KIND
from maestrale.files.tables import StoredFile


class FileTasks:
    def __init__(self, blobs: BlobStore) -> None:
        self.blobs = blobs

    async def expire(self, ctx: JobContext) -> dict[str, Any]:
        """Delete the file (row, then blob) if its expiry has passed; it may be gone already."""
        file_id = str(ctx.payload["file_id"])
        async with ctx.db.session() as session:
            row = await session.get(StoredFile, file_id)
            if row is None or row.expires_at is None or row.expires_at > utcnow():
                return {"deleted": False}
            key = row.blob_key
            await session.delete(row)
        await self.blobs.delete(key)
        return {"deleted": True}


def register(registry: JobRegistry, blobs: BlobStore) -> None:
    registry.register(EXPIRE_KIND, FileTasks(blobs).expire)
