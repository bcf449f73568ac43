"""Files: streamed uploads with their statistics and purpose rules, reads, deletion, downloads and
signed links. Blobs are written before the row is flushed and removed if the upload is refused."""

from __future__ import annotations

import hashlib
import mimetypes
import re
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from sqlalchemy.ext.asyncio import AsyncSession

from maestrale.core.auth.principal import Tenant
from maestrale.core.blobs import BlobStore, BlobTooLarge
from maestrale.core.clock import utcnow
from maestrale.core.errors import BadRequest, NotFound, PayloadTooLarge
from maestrale.core.ids import new_id
from maestrale.core.jobs.queue import JobQueue
from maestrale.core.pagination import PageParams
from maestrale.core.signing import sign, verify
from maestrale.core.validation import RequestInvalid
from maestrale.files.download import (
    ByteRange,
    SignatureExpired,
    SignatureInvalid,
    parse_range,
    signed_message,
)
from maestrale.files.lines import JsonlStats
from maestrale.files.multipart import Event, FilePart, FormField, MultipartReader, file_chunks
from maestrale.files.repository import FileRepository, file_by_id
from maestrale.files.tables import StoredFile

EXPIRE_KIND = "files.expire"
# Multipart framing around the file part: a body longer than the limit plus this is refused
# from its Content-Length, before any byte is read.
FRAMING_SLACK = 64 * 1024
JSONL_PURPOSES = frozenset({"fine-tune", "batch"})
JSONL_TYPES = frozenset({"application/jsonl", "application/x-ndjson", "application/x-jsonlines"})
MAX_SIGNED_HOURS = 168


class FileNotFound(NotFound):
    code = "file_not_found"


class InvalidJsonl(BadRequest):
    code = "invalid_jsonl"


class UploadForm(BaseModel):
    """The form fields of an upload (the SDK's MultiPartBodyParams besides `file`)."""

    model_config = ConfigDict(extra="ignore")

    purpose: str = Field(default="fine-tune", pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$")
    visibility: Literal["workspace", "user"] = "workspace"
    expiry: int | None = Field(default=None, ge=1, le=24 * 365 * 10, description="hours")


def too_large(limit: int) -> PayloadTooLarge:
    return PayloadTooLarge(f"the file exceeds the upload limit of {limit} bytes")


def clean_filename(name: str) -> str:
    """The base name the client gave, without directories or control characters."""
    base = re.split(r"[\\/]", name)[-1]
    base = "".join(ch for ch in base if ch.isprintable()).strip()
    return base[:255] or "upload"


def guess_mimetype(filename: str, declared: str | None) -> str:
    declared = "".join(ch for ch in declared or "" if ch.isprintable()).strip()
    if declared and declared.lower() != "application/octet-stream":
        return declared[:255]
    lower = filename.lower()
    if lower.endswith(".jsonl"):
        return "application/jsonl"
    return mimetypes.guess_type(lower)[0] or "application/octet-stream"


def sample_type_of(purpose: str, stats: JsonlStats | None) -> str:
    if purpose == "batch":
        return "batch_request"
    if purpose == "ocr":
        return "ocr_input"
    keys = stats.first_keys if stats is not None else frozenset()
    return "pretrain" if "text" in keys and "messages" not in keys else "instruct"


@dataclass(slots=True)
class _Stored:
    part: FilePart
    key: str
    size: int
    sha256: str
    stats: JsonlStats | None


class FileService:
    def __init__(
        self, session: AsyncSession, tenant: Tenant, key_id: str | None, blobs: BlobStore
    ) -> None:
        self.session = session
        self.tenant = tenant
        self.key_id = key_id
        self.blobs = blobs
        self.repo = FileRepository(session, tenant, key_id)

    def blob_key(self, file_id: str) -> str:
        return f"{self.tenant.workspace_id}/files/{file_id}"

    async def get(self, file_id: str) -> StoredFile:
        row = await self.repo.get(file_id)
        if row is None:
            raise FileNotFound(f"file {file_id} not found", param="file_id")
        return row

    async def page(
        self,
        page: PageParams,
        *,
        purpose: str | None,
        sample_types: list[str],
        sources: list[str],
        mimetypes: list[str],
        search: str | None,
        with_total: bool,
    ) -> tuple[list[StoredFile], int | None]:
        return await self.repo.page(
            page,
            purpose=purpose,
            sample_types=sample_types,
            sources=sources,
            mimetypes=mimetypes,
            search=search,
            with_total=with_total,
        )

    async def upload(
        self,
        content_type: str | None,
        content_length: int | None,
        body: AsyncIterator[bytes],
        *,
        max_bytes: int,
        queue: JobQueue,
    ) -> StoredFile:
        """Stream a multipart upload into blob storage and record it; nothing stays stored when
        it is refused (too large, malformed, or against its purpose's rules)."""
        if content_length is not None and content_length > max_bytes + FRAMING_SLACK:
            raise too_large(max_bytes)
        events = MultipartReader(content_type, body).events()
        fields: dict[str, str] = {}
        stored: _Stored | None = None
        try:
            async for event in events:
                if isinstance(event, FormField):
                    fields.setdefault(event.name, event.value)  # a repeated field: the first
                elif isinstance(event, FilePart):
                    if event.name != "file" or stored is not None:
                        raise BadRequest(
                            "an upload has exactly one file part, named `file`",
                            code="invalid_multipart",
                            param=event.name,
                        )
                    stored = await self._store(event, fields, events, max_bytes)
            if stored is None:
                raise BadRequest("the upload has no `file` part", code="missing_file", param="file")
            try:
                form = UploadForm.model_validate(fields)
            except ValidationError as exc:
                raise RequestInvalid(exc) from exc
            self._check_purpose(form, stored)
        except BaseException:
            if stored is not None:
                await self.blobs.delete(stored.key)
            raise
        return await self._record(form, stored, queue)

    async def _store(
        self, part: FilePart, fields: dict[str, str], events: AsyncIterator[Event], max_bytes: int
    ) -> _Stored:
        filename = clean_filename(part.filename)
        purpose = fields.get("purpose")
        # The purpose may come after the file (it comes first from the SDKs); without it, the
        # default purpose (fine-tune) needs the statistics too.
        jsonl = (
            filename.lower().endswith(".jsonl")
            or purpose is None
            or purpose in JSONL_PURPOSES
            or (part.content_type or "").lower() in JSONL_TYPES
        )
        stats = JsonlStats() if jsonl else None
        digest = hashlib.sha256()

        def sink(chunk: bytes) -> None:
            digest.update(chunk)
            if stats is not None:
                stats.feed(chunk)

        key = self.blob_key(new_id())
        try:
            size = await self.blobs.put(key, file_chunks(events, sink), max_bytes=max_bytes)
        except BlobTooLarge as exc:
            raise too_large(max_bytes) from exc
        if stats is not None:
            stats.close()
        named = FilePart(part.name, filename, part.content_type)
        return _Stored(named, key, size, digest.hexdigest(), stats)

    def _check_purpose(self, form: UploadForm, stored: _Stored) -> None:
        """A fine-tune file (the default purpose) must be JSON Lines: judged by its content,
        whatever its name (the TypeScript SDK's blobs are named "blob")."""
        if form.purpose != "fine-tune":
            return
        name = stored.part.filename
        stats = stored.stats
        if stats is None:  # cannot happen: the purpose is known before the file or defaults
            raise InvalidJsonl(f"{name} could not be checked as JSONL", param="file")
        if stats.first_error is not None:
            line, reason = stats.first_error
            raise InvalidJsonl(
                f"{name}: line {line} {reason}; fine-tune files are JSON Lines, one JSON object "
                "per line",
                param="file",
            )
        if stats.num_lines == 0:
            raise InvalidJsonl(f"{name} has no lines", param="file")

    async def _record(self, form: UploadForm, stored: _Stored, queue: JobQueue) -> StoredFile:
        file_id = stored.key.rsplit("/", 1)[-1]
        filename = stored.part.filename
        jsonl = filename.lower().endswith(".jsonl") or form.purpose in JSONL_PURPOSES
        stats = stored.stats if jsonl else None
        expires_at = None if form.expiry is None else utcnow() + timedelta(hours=form.expiry)
        row = StoredFile(
            id=file_id,
            user_id=self.tenant.user_id,
            key_id=self.key_id,
            visibility=form.visibility,
            filename=filename,
            purpose=form.purpose,
            sample_type=sample_type_of(form.purpose, stats),
            source="upload",
            size=stored.size,
            num_lines=None if stats is None else stats.num_lines,
            mimetype=guess_mimetype(filename, stored.part.content_type),
            signature=stored.sha256,
            blob_key=stored.key,
            expires_at=expires_at,
            created_at=utcnow(),
        )
        await self.repo.add(row)
        if expires_at is not None:
            await queue.enqueue(
                self.session,
                EXPIRE_KIND,
                {"file_id": file_id},
                tenant=self.tenant,
                run_at=expires_at,
                dedupe_key=f"file-expire:{file_id}",
            )
        return row

    async def delete(self, file_id: str) -> None:
        row = await self.get(file_id)
        await self.repo.delete(row)
        await self.blobs.delete(row.blob_key)

    async def content(
        self, row: StoredFile, range_header: str | None
    ) -> tuple[int, ByteRange | None]:
        """The blob's size and the range to send; 404 if the blob is gone."""
        size = await self.blobs.size(row.blob_key)
        if size is None:
            raise FileNotFound(f"the content of file {row.id} is no longer stored")
        return size, parse_range(range_header, size)

    async def signed_url(self, file_id: str, hours: int, base_url: str, secret: bytes) -> str:
        if not 1 <= hours <= MAX_SIGNED_HOURS:
            raise BadRequest(
                f"expiry must be between 1 and {MAX_SIGNED_HOURS} hours",
                code="invalid_expiry",
                param="expiry",
            )
        row = await self.get(file_id)
        expires = int(time.time()) + hours * 3600
        signature = sign(secret, signed_message(row.id, expires))
        return f"{base_url}/v1/files/{row.id}/content?expires={expires}&signature={signature}"


async def signed_file(
    session: AsyncSession, file_id: str, expires: str, signature: str, secret: bytes
) -> StoredFile:
    """The file a signed link opens: 403 if the signature is wrong or the link expired."""
    # Epoch seconds: a longer number is no link of ours (and int() refuses 4,300+ digits).
    well_formed = expires.isascii() and expires.isdigit() and len(expires) <= 20
    if not well_formed or not verify(secret, signed_message(file_id, int(expires)), signature):
        raise SignatureInvalid("the link's signature is invalid")
    if int(expires) < time.time():
        raise SignatureExpired("the signed link has expired")
    row = await file_by_id(session, file_id)
    if row is None:
        raise FileNotFound(f"file {file_id} not found", param="file_id")
    return row
