"""Transcription: find the audio (an uploaded part, a fetched `file_url`, or a file of the
caller's workspace), open and admit the call through the gateway, run the engine, and shape the
platform's response. Every call is accounted with its audio seconds."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import Any
from urllib.parse import unquote, urlsplit

from maestrale.audio.form import UploadedAudio, audio_too_large
from maestrale.audio.schemas import TranscriptionForm
from maestrale.config import Settings
from maestrale.core.errors import BadRequest
from maestrale.core.fetch import fetch_url
from maestrale.engines.protocols import TranscriptionEngine
from maestrale.engines.transcription_types import (
    Segment,
    TranscriptionRequest,
    TranscriptionResult,
)
from maestrale.files.service import FileNotFound, FileService
from maestrale.gateway.call import Call, Report
from maestrale.gateway.capabilities import TRANSCRIPTION
from maestrale.gateway.gateway import Gateway
from maestrale.gateway.hooks import Caller


class MissingAudio(BadRequest):
    code = "missing_audio"


def _name_from_url(url: str) -> str:
    if url[:5].lower() == "data:":
        return "audio"
    path = unquote(urlsplit(url).path)
    return path.rsplit("/", 1)[-1][:255] or "audio"


def segment_chunks(segment: Segment, granularities: Sequence[str]) -> list[dict[str, Any]]:
    """The response's `segments` entries for one segment: the segment itself (with its `words`
    when both granularities are asked), or its words alone when only "word" is (and the engine
    timed words: otherwise the segment stands in for them)."""
    if "word" in granularities and "segment" not in granularities and segment.words:
        return [
            {
                "type": "transcription_segment",
                "text": word.text,
                "start": word.start,
                "end": word.end,
                "score": word.score,
                "speaker_id": segment.speaker_id,
            }
            for word in segment.words
        ]
    chunk: dict[str, Any] = {
        "type": "transcription_segment",
        "text": segment.text,
        "start": segment.start,
        "end": segment.end,
        "score": segment.score,
        "speaker_id": segment.speaker_id,
    }
    if "word" in granularities:
        chunk["words"] = [
            {"text": w.text, "start": w.start, "end": w.end, "score": w.score}
            for w in segment.words
        ]
    return [chunk]


def usage_body(result: TranscriptionResult) -> dict[str, Any]:
    """UsageInfo: tokens as the engine counted them, and the audio's length in whole seconds
    (the SDK types `prompt_audio_seconds` as an integer; a started second counts)."""
    usage = result.usage
    return {
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "total_tokens": usage.total_tokens,
        "prompt_audio_seconds": math.ceil(result.audio_seconds - 1e-6),
    }


def response_body(
    model: str, result: TranscriptionResult, granularities: Sequence[str]
) -> dict[str, Any]:
    segments = [chunk for s in result.segments for chunk in segment_chunks(s, granularities)]
    return {
        "model": model,
        "text": result.text,
        "language": result.language,
        "segments": segments,
        "usage": usage_body(result),
    }


class TranscriptionService:
    def __init__(self, gateway: Gateway, settings: Settings, files: FileService) -> None:
        self.gateway = gateway
        self.settings = settings
        self.files = files

    async def prepare(
        self,
        caller: Caller,
        form: TranscriptionForm,
        upload: UploadedAudio | None,
        *,
        correlation_id: str,
        source: str = "api",
    ) -> tuple[Call[TranscriptionEngine], TranscriptionRequest]:
        """The admitted call and the engine's request; 400 without audio (or with two sources),
        404 for an unknown model or file, 413 for audio over the size limit."""
        given = [
            name
            for name, value in (
                ("file", upload),
                ("file_url", form.file_url),
                ("file_id", form.file_id),
            )
            if value is not None
        ]
        if not given:
            raise MissingAudio("send the audio as a `file` part, a `file_url` or a `file_id`")
        if len(given) > 1:
            raise BadRequest(
                f"send only one of file, file_url and file_id (got {', '.join(given)})",
                code="ambiguous_audio",
            )
        call = await self.gateway.open(
            caller, form.model, TRANSCRIPTION, correlation_id=correlation_id, source=source
        )
        audio = upload or await self._audio(form)
        if not audio.data:
            raise MissingAudio("the audio file is empty", param=given[0])
        await self.gateway.admit(call, 0)
        request = TranscriptionRequest(
            model=call.upstream,
            audio=audio.data,
            filename=audio.filename,
            content_type=audio.content_type,
            language=form.language,
            temperature=form.temperature,
            timestamp_granularities=list(form.timestamp_granularities),
            diarize=form.diarize,
            context_bias=list(form.context_bias),
            max_seconds=self.settings.audio_max_seconds,
        )
        return call, request

    async def _audio(self, form: TranscriptionForm) -> UploadedAudio:
        limit = self.settings.audio_max_bytes
        if form.file_url is not None:
            policy = self.settings.fetch_policy
            policy = replace(policy, max_bytes=min(policy.max_bytes, limit))
            fetched = await fetch_url(form.file_url, policy)
            return UploadedAudio(fetched.content, _name_from_url(fetched.url), fetched.content_type)
        assert form.file_id is not None
        row = await self.files.get(form.file_id)
        size = await self.files.blobs.size(row.blob_key)
        if size is None:
            raise FileNotFound(f"the content of file {row.id} is no longer stored")
        if size > limit:
            raise audio_too_large(limit)
        data = bytearray()
        async for chunk in self.files.blobs.get(row.blob_key):
            data += chunk
        return UploadedAudio(bytes(data), row.filename, row.mimetype)

    async def complete(
        self, call: Call[TranscriptionEngine], request: TranscriptionRequest
    ) -> TranscriptionResult:
        """Run the engine through the gateway, which maps its failures and accounts for the call
        with its audio seconds."""
        return await self.gateway.run(call, lambda engine: engine.transcribe(request), report)


def report(result: TranscriptionResult) -> Report:
    """What a transcription reports to accounting: its tokens and the audio's seconds."""
    return Report(result.usage, audio_seconds=result.audio_seconds)
