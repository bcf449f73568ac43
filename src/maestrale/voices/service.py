"""Voices of a workspace: custom voices made from a caller's sample, beside the preset voices
of the served speech models.

A custom voice's sample is validated and normalized before anything is stored (`sample.py`),
written to blob storage, then recorded; a failure at any step leaves nothing behind. Preset
voices are read-only: they belong to their engine.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

import anyio
import orjson
from sqlalchemy.ext.asyncio import AsyncSession

from maestrale.core.auth.principal import Tenant
from maestrale.core.blobs import BlobStore, ReleasingBlobStore
from maestrale.core.db import Database
from maestrale.core.errors import BadRequest, Forbidden, NotFound
from maestrale.core.ids import new_id
from maestrale.core.uow import Release
from maestrale.voices.presets import PresetVoice, PresetVoices
from maestrale.voices.repository import VoiceFilter, VoiceRepository
from maestrale.voices.sample import decode_base64, normalize
from maestrale.voices.schemas import VoiceCreate, VoiceUpdate
from maestrale.voices.tables import CustomVoice

Voice = CustomVoice | PresetVoice
VoiceType = Literal["all", "preset", "custom"]


class VoiceNotFound(NotFound):
    code = "voice_not_found"


class PresetVoiceReadOnly(Forbidden):
    code = "preset_voice_read_only"


class InvalidPageToken(BadRequest):
    code = "invalid_page_token"


@dataclass(frozen=True, slots=True)
class SampleLimits:
    max_bytes: int
    max_seconds: float


def slugify(name: str) -> str | None:
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
    return slug[:256] or None


def _encode_token(payload: list[object]) -> str:
    return base64.urlsafe_b64encode(orjson.dumps(payload)).decode().rstrip("=")


def _decode_token(token: str) -> tuple[int, tuple[datetime, str] | None]:
    """(presets to skip, custom cursor) of a `/v2` page token; a skip of -1 means the presets
    are done (a cursor of None then starts the custom voices from the newest)."""
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        match orjson.loads(raw):
            case ["p", int(skip)] if skip >= 0:
                return skip, None
            case ["c"]:
                return -1, None
            case ["c", str(created), str(id_)]:
                at = datetime.fromisoformat(created)
                if at.tzinfo is not None:
                    return -1, (at, id_)
    except (binascii.Error, ValueError, orjson.JSONDecodeError):
        pass
    raise InvalidPageToken("page_token is not a token this server returned", param="page_token")


def _preset_matches(voice: PresetVoice, where: VoiceFilter) -> bool:
    if where.kind is not None:
        return False  # a preset voice is not a clone
    if where.genders and voice.gender not in where.genders:
        return False
    if where.languages:
        wanted = {code.lower() for code in where.languages}
        if not wanted.intersection(code.lower() for code in voice.languages):
            return False
    return not where.query or where.query.lower() in voice.name.lower()


class VoiceService:
    """The voices of one workspace.

    `VoiceService(session, tenant, blobs, presets=None, release=None)`: `session` is the
    request's (or job's) `AsyncSession`, `tenant` the caller's `Tenant` (every query is scoped
    to its workspace), `blobs` the `BlobStore` of the samples (a request passes its
    `ReleasingBlobs`, so that no transaction stays open while the store answers), `presets` the
    app's `PresetVoices` and `release` the owner's `UnitOfWork.release` (run before a preset
    sample is synthesized), both needed only by what lists or reads preset voices
    (`reference_sample` needs neither)."""

    def __init__(
        self,
        session: AsyncSession,
        tenant: Tenant,
        blobs: BlobStore,
        presets: PresetVoices | None = None,
        release: Release | None = None,
    ) -> None:
        self.session = session
        self.tenant = tenant
        self.blobs = blobs
        self.presets = presets
        self.release = release
        self.repo = VoiceRepository(session, tenant)

    async def reference_sample(self, voice_id: str) -> bytes | None:
        """The stored sample of the workspace's custom voice `voice_id` (WAV, mono, 16-bit,
        24 kHz, at most 30 s), or None when the workspace has no custom voice of that id (a
        preset voice id included)."""
        row = await self.repo.get(voice_id)
        if row is None:
            return None
        return await self._read_blob(row)

    def _preset_list(self) -> list[PresetVoice]:
        return self.presets.all() if self.presets is not None else []

    async def get(self, voice_id: str) -> Voice:
        row = await self.repo.get(voice_id)
        if row is not None:
            return row
        preset = self.presets.get(voice_id) if self.presets is not None else None
        if preset is None:
            raise VoiceNotFound(f"voice {voice_id} not found", param="voice_id")
        return preset

    async def custom(self, voice_id: str) -> CustomVoice:
        """The custom voice `voice_id`; 403 for a preset voice, 404 for no voice."""
        voice = await self.get(voice_id)
        if isinstance(voice, PresetVoice):
            raise PresetVoiceReadOnly(
                f"voice {voice_id} is a preset voice of model {voice.model}: "
                "only custom voices can be changed or deleted",
                param="voice_id",
            )
        return voice

    async def create(self, body: VoiceCreate, limits: SampleLimits) -> CustomVoice:
        if not body.sample_audio:
            raise BadRequest(
                "sample_audio (the voice's audio, base64) is required",
                code="missing_voice_sample",
                param="sample_audio",
            )
        data = decode_base64(body.sample_audio, limits.max_bytes)
        # CPU work off the loop; the request holds no transaction yet (authentication reads
        # with a short one of its own).
        sample = await anyio.to_thread.run_sync(normalize, data, limits.max_seconds)
        voice_id = new_id()
        key = f"{self.tenant.workspace_id}/voices/{voice_id}.wav"

        async def chunks() -> AsyncIterator[bytes]:
            yield sample.wav

        await self.blobs.put(key, chunks())
        try:
            return await self.repo.add(
                CustomVoice(
                    id=voice_id,
                    user_id=self.tenant.user_id,
                    name=body.name,
                    slug=body.slug or slugify(body.name),
                    languages=body.languages,
                    gender=body.gender,
                    age=body.age,
                    tags=body.tags,
                    color=body.color,
                    description=body.description,
                    retention_notice=body.retention_notice,
                    kind="ivc",
                    sample_filename=body.sample_filename,
                    sample_seconds=sample.seconds,
                    trimmed_seconds=sample.trimmed_seconds,
                    blob_key=key,
                )
            )
        except BaseException:
            await self.blobs.delete(key)
            raise

    async def update(self, voice_id: str, patch: VoiceUpdate) -> CustomVoice:
        row = await self.custom(voice_id)
        sent = patch.model_fields_set
        if "name" in sent:
            if patch.name is None:
                raise BadRequest("name cannot be null", code="invalid_name", param="name")
            if row.slug == slugify(row.name):  # a slug of the caller's own stays
                row.slug = slugify(patch.name)
            row.name = patch.name
        if "languages" in sent:
            row.languages = patch.languages or []
        if "retention_notice" in sent:
            row.retention_notice = 30 if patch.retention_notice is None else patch.retention_notice
        for name in ("gender", "age", "tags", "description"):
            if name in sent:
                setattr(row, name, getattr(patch, name))
        await self.session.flush()
        return row

    async def delete(self, voice_id: str) -> CustomVoice:
        """Remove the voice's row; its blob is the caller's to delete once that is committed
        (`row.blob_key`)."""
        row = await self.custom(voice_id)
        await self.repo.delete(row)
        return row

    async def sample(self, voice_id: str) -> bytes:
        """The voice's sample as WAV: a custom voice's stored sample, a preset voice speaking a
        fixed sentence."""
        voice = await self.get(voice_id)
        if isinstance(voice, PresetVoice):
            assert self.presets is not None
            if self.release is not None:
                await self.release()  # the synthesis is an engine call
            return await self.presets.sample(voice)
        return await self._read_blob(voice)

    async def _read_blob(self, row: CustomVoice) -> bytes:
        out = bytearray()
        try:
            async for chunk in self.blobs.get(row.blob_key):
                out += chunk
        except KeyError as exc:
            raise VoiceNotFound(f"the sample of voice {row.id} is no longer stored") from exc
        return bytes(out)

    async def list_v1(self, limit: int, offset: int, type_: VoiceType) -> tuple[list[Voice], int]:
        """A page of the voices by offset, presets first, and the total."""
        presets = self._preset_list() if type_ != "custom" else []
        items: list[Voice] = list(presets[offset : offset + limit])
        if type_ == "preset":
            return items, len(presets)
        rows, customs = await self.repo.page(max(0, offset - len(presets)), limit - len(items))
        items.extend(rows)
        return items, len(presets) + customs

    async def list_v2(
        self, page_size: int, token: str | None, type_: VoiceType, where: VoiceFilter
    ) -> tuple[list[Voice], str | None]:
        """A page of the voices matching `where`, presets first, and the next page's token
        (None on the last page). Tokens name the last voice returned, so a page never repeats
        or skips a custom voice created or deleted meanwhile."""
        skip, cursor = _decode_token(token) if token else (0, None)
        items: list[Voice] = []
        next_token: str | None = None
        if type_ != "custom" and skip >= 0:
            presets = [p for p in self._preset_list() if _preset_matches(p, where)]
            items.extend(presets[skip : skip + page_size])
            if skip + page_size < len(presets):
                return items, _encode_token(["p", skip + page_size])
        if type_ != "preset" and len(items) < page_size:
            want = page_size - len(items)
            rows = await self.repo.after(where, cursor, want + 1)
            items.extend(rows[:want])
            if len(rows) > want:
                last = rows[want - 1]
                next_token = _encode_token(["c", last.created_at.isoformat(), last.id])
        elif type_ != "preset" and await self.repo.after(where, None, 1):
            # The presets filled the page exactly: custom voices start the next one.
            next_token = _encode_token(["c"])
        return items, next_token


def total_pages(total: int, page_size: int) -> int:
    return math.ceil(total / page_size) if page_size else 0


class WorkspaceVoices:
    """The custom voices of a workspace for a caller with no request's unit of work (a
    WebSocket): each sample read in a short unit of work of its own, ended before the sample's
    blob is read."""

    def __init__(self, db: Database, blobs: BlobStore, tenant: Tenant) -> None:
        self.db = db
        self.blobs = blobs
        self.tenant = tenant

    async def reference_sample(self, voice_id: str) -> bytes | None:
        async with self.db.transaction() as work:
            blobs = ReleasingBlobStore(self.blobs, work.release, self.db)
            return await VoiceService(work.session, self.tenant, blobs).reference_sample(voice_id)
