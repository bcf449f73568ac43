"""The voices group: `/v1/audio/voices` (create from a sample, list by offset, get, update,
delete, sample) and `/v2/audio/voices` (list by cursor, with filters)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Query, Request, Response

from maestrale.config.dependencies import AppSettings
from maestrale.core.auth.dependencies import StandardAuth
from maestrale.core.auth.principal import Principal, Tenant
from maestrale.core.blobs import BlobStore
from maestrale.core.dependencies import Blobs, ReleasingBlobs
from maestrale.core.errors import error_responses
from maestrale.core.routing import Work, domain_router
from maestrale.core.uow import UnitOfWork
from maestrale.engines.dependencies import Engines
from maestrale.voices.presets import PresetVoices, SampleCache
from maestrale.voices.repository import VoiceFilter
from maestrale.voices.schemas import (
    Gender,
    VoiceCreate,
    VoiceList,
    VoiceOut,
    VoicePage,
    VoiceType,
    VoiceUpdate,
)
from maestrale.voices.service import SampleLimits, VoiceService, total_pages

router = domain_router(prefix="/audio/voices", tags=["audio.voices"])
# Mounted beside the /v1 routes (api.py): the 3.x cursor-paginated list.
router_v2 = domain_router(prefix="/v2/audio/voices", tags=["audio.voices"])


async def get_presets(request: Request, engines: Engines) -> PresetVoices:
    """The preset voices of the app's speech models; their samples are cached by the app."""
    cache: SampleCache | None = getattr(request.app.state, "preset_voice_samples", None)
    if cache is None:
        cache = request.app.state.preset_voice_samples = SampleCache()
    return PresetVoices(engines, cache)


Presets = Annotated[PresetVoices, Depends(get_presets)]


def _service(
    work: UnitOfWork, principal: Principal, blobs: BlobStore, presets: PresetVoices
) -> VoiceService:
    return VoiceService(work.session, Tenant.of(principal), blobs, presets, work.release)


@router.get("", response_model=VoiceList)
async def list_voices(
    work: Work,
    principal: StandardAuth,
    blobs: ReleasingBlobs,
    presets: Presets,
    limit: Annotated[int, Query(ge=1, le=1000)] = 10,
    offset: Annotated[int, Query(ge=0)] = 0,
    type: Annotated[VoiceType, Query()] = "all",
) -> VoiceList:
    """List the voices (the preset voices of the speech models first, then the workspace's
    custom voices, newest first) by offset. Prefer `GET /v2/audio/voices`."""
    items, total = await _service(work, principal, blobs, presets).list_v1(limit, offset, type)
    return VoiceList(
        items=[VoiceOut.of(voice) for voice in items],
        total=total,
        page=offset // limit + 1,
        page_size=limit,
        total_pages=total_pages(total, limit),
    )


@router.post("", response_model=VoiceOut, responses=error_responses((400, 413, 422)))
async def create_voice(
    body: VoiceCreate,
    work: Work,
    principal: StandardAuth,
    blobs: ReleasingBlobs,
    presets: Presets,
    settings: AppSettings,
) -> VoiceOut:
    """Create a custom voice of the workspace from a sample (`sample_audio`, base64 of WAV,
    MP3, Ogg, FLAC, M4A, WebM or AIFF audio of 2 seconds to 5 minutes, 10 MB at most by
    default). The sample is stored normalized (WAV, mono, 24 kHz), cut to its first 30 seconds
    (`trimmed_seconds` says how much was cut). A refused sample stores nothing."""
    limits = SampleLimits(settings.voice_sample_max_bytes, settings.voice_sample_max_seconds)
    row = await _service(work, principal, blobs, presets).create(body, limits)
    return VoiceOut.of(row)


@router.get("/{voice_id}", response_model=VoiceOut, responses=error_responses((404,)))
async def get_voice(
    voice_id: str, work: Work, principal: StandardAuth, blobs: ReleasingBlobs, presets: Presets
) -> VoiceOut:
    """A voice, preset or custom."""
    return VoiceOut.of(await _service(work, principal, blobs, presets).get(voice_id))


@router.patch("/{voice_id}", response_model=VoiceOut, responses=error_responses((403, 404, 422)))
async def update_voice(
    voice_id: str,
    body: VoiceUpdate,
    work: Work,
    principal: StandardAuth,
    blobs: ReleasingBlobs,
    presets: Presets,
) -> VoiceOut:
    """Change a custom voice's metadata (only the fields sent); a preset voice is read-only
    (403)."""
    return VoiceOut.of(await _service(work, principal, blobs, presets).update(voice_id, body))


@router.delete("/{voice_id}", response_model=VoiceOut, responses=error_responses((403, 404)))
async def delete_voice(
    voice_id: str,
    work: Work,
    principal: StandardAuth,
    blobs: Blobs,
    presets: Presets,
) -> VoiceOut:
    """Delete a custom voice and its sample; a preset voice cannot be deleted (403)."""
    row = await _service(work, principal, blobs, presets).delete(voice_id)

    # The sample goes once the row's removal is committed, never before.
    async def delete_sample() -> None:
        await blobs.delete(row.blob_key)

    work.on_commit(delete_sample)
    return VoiceOut.of(row)


@router.get(
    "/{voice_id}/sample",
    response_class=Response,
    responses={
        200: {"content": {"audio/wav": {"schema": {"type": "string", "format": "binary"}}}},
        **error_responses((404, 502)),
    },
)
async def get_voice_sample(
    voice_id: str, work: Work, principal: StandardAuth, blobs: ReleasingBlobs, presets: Presets
) -> Response:
    """The voice's sample as WAV: a custom voice's stored (normalized) sample, or a preset
    voice speaking a short sentence."""
    data = await _service(work, principal, blobs, presets).sample(voice_id)
    return Response(content=data, media_type="audio/wav")


@router_v2.get("", response_model=VoicePage, responses=error_responses((400, 422)))
async def search_voices(
    work: Work,
    principal: StandardAuth,
    blobs: ReleasingBlobs,
    presets: Presets,
    page_size: Annotated[int, Query(ge=1, le=1000)] = 10,
    page_token: Annotated[str | None, Query(max_length=1000)] = None,
    type: Annotated[VoiceType, Query()] = "all",
    gender: Annotated[list[Gender] | None, Query()] = None,
    language: Annotated[list[str] | None, Query()] = None,
    query: Annotated[str | None, Query(max_length=256)] = None,
    kind: Annotated[str | None, Query(pattern="^(ivc|pvc)$")] = None,
) -> VoicePage:
    """List the voices by cursor (preset voices first, then custom voices newest first),
    filtered by gender, language, a case-insensitive match on the name, or clone kind; pass
    `next_page_token` back as `page_token` for the next page (null on the last)."""
    where = VoiceFilter(tuple(gender or ()), tuple(language or ()), query or None, kind)
    items, token = await _service(work, principal, blobs, presets).list_v2(
        page_size, page_token, type, where
    )
    return VoicePage(data=[VoiceOut.of(voice) for voice in items], next_page_token=token)
