"""Files the server makes for a workspace (a tool's output: a code run's files, a generated
image): stored as Files API files of that workspace, so that `files.retrieve` and
`files.download` work on them and another workspace never finds them."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator

from maestrale.config import Settings
from maestrale.core.auth.principal import Tenant
from maestrale.core.blobs import CHUNK, BlobStore, BlobTooLarge
from maestrale.core.clock import utcnow
from maestrale.core.db import Database
from maestrale.core.ids import new_id
from maestrale.files.repository import FileRepository
from maestrale.files.service import clean_filename, guess_mimetype, too_large
from maestrale.files.tables import StoredFile

GENERATED_PURPOSE = "tool_output"
GENERATED_SOURCE = "service"  # as the other files the server writes (batch results, exports)


async def _chunks(data: bytes) -> AsyncIterator[bytes]:
    for start in range(0, len(data), CHUNK):
        yield data[start : start + CHUNK]


async def save_generated_file(
    db: Database,
    blobs: BlobStore,
    settings: Settings,
    tenant: Tenant,
    *,
    filename: str,
    data: bytes,
    mimetype: str | None,
    purpose: str = GENERATED_PURPOSE,
) -> tuple[str, str]:
    """Store `data` as a file of the tenant's workspace (visible to the whole workspace): the
    blob first, then its row in a short session of its own. Returns (file id, the stored file
    name: `filename` without directories or control characters). Over the upload limit →
    PayloadTooLarge, and nothing is stored."""
    name = clean_filename(filename)
    file_id = new_id()
    key = f"{tenant.workspace_id}/files/{file_id}"
    limit = settings.max_upload_bytes
    if len(data) > limit:
        raise too_large(limit)
    try:
        size = await blobs.put(key, _chunks(data), max_bytes=limit)
    except BlobTooLarge as exc:
        raise too_large(limit) from exc
    row = StoredFile(
        id=file_id,
        user_id=tenant.user_id,
        key_id=None,
        visibility="workspace",
        filename=name,
        purpose=purpose,
        sample_type=purpose,
        source=GENERATED_SOURCE,
        size=size,
        num_lines=None,
        mimetype=guess_mimetype(name, mimetype),
        signature=hashlib.sha256(data).hexdigest(),
        blob_key=key,
        created_at=utcnow(),
    )
    try:
        async with db.transaction() as work:
            await FileRepository(work.session, tenant, None).add(row)
    except BaseException:
        await blobs.delete(key)
        raise
    return file_id, name
