"""A document upload, streamed from the multipart body straight into blob storage (the files
group's reader and limits): nothing of the file is held in memory beyond the chunk at hand,
and nothing stays stored when the upload is refused."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator
from dataclasses import dataclass

from maestrale.core.blobs import BlobStore, BlobTooLarge
from maestrale.core.errors import BadRequest
from maestrale.files.multipart import FilePart, MultipartReader, file_chunks
from maestrale.files.service import FRAMING_SLACK, clean_filename, too_large


@dataclass(frozen=True, slots=True)
class Received:
    """The stored upload: its blob, size and SHA-256, and the name and type the client gave."""

    key: str
    size: int
    sha256: str
    filename: str
    content_type: str | None


async def receive(
    blobs: BlobStore,
    key: str,
    content_type: str | None,
    content_length: int | None,
    body: AsyncIterator[bytes],
    *,
    max_bytes: int,
) -> Received:
    """Store the `file` part of a multipart body under `key`. 413 past `max_bytes` (from the
    Content-Length at once), 400 for a body without exactly one non-empty `file` part."""
    if content_length is not None and content_length > max_bytes + FRAMING_SLACK:
        raise too_large(max_bytes)
    events = MultipartReader(content_type, body).events()
    received: Received | None = None
    try:
        async for event in events:
            if not isinstance(event, FilePart):
                continue  # form fields: none is read
            if event.name != "file" or received is not None:
                raise BadRequest(
                    "an upload has exactly one file part, named `file`",
                    code="invalid_multipart",
                    param=event.name[:64],
                )
            digest = hashlib.sha256()
            try:
                size = await blobs.put(key, file_chunks(events, digest.update), max_bytes=max_bytes)
            except BlobTooLarge as exc:
                raise too_large(max_bytes) from exc
            received = Received(
                key, size, digest.hexdigest(), clean_filename(event.filename), event.content_type
            )
        if received is None:
            raise BadRequest("the upload has no `file` part", code="missing_file", param="file")
        if received.size == 0:
            raise BadRequest("the uploaded file is empty", code="empty_file", param="file")
    except BaseException:
        if received is not None:
            await blobs.delete(key)
        raise
    return received
