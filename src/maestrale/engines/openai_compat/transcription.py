"""The `openai_compat_transcription` engine: speech transcription forwarded to an upstream's
POST {base_url}/audio/transcriptions (an upstream platform, vLLM, speaches / faster-whisper-server,
whisper.cpp's server...), as multipart with the audio passed through untouched.

The catalog entry takes the `openai_compat` fields (`base_url`, `api_key_env`, `upstream_model`,
`options` with timeouts and retries) plus one option of its own:
- `dialect`: "mistral" (default) sends the platform's fields (`timestamp_granularities` repeated,
  `diarize`, `context_bias`) and reads `usage.prompt_audio_seconds`; "openai" sends
  `response_format=verbose_json` and `timestamp_granularities[]`, and reads `duration`, `language`
  (full English names are mapped back to codes where known) and top-level `words`.

Streaming is served from one plain upstream call (language, segments and the result are sent as
events once it answers): the streamed dialects of upstreams differ too much to pass through.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any, Literal

from pydantic import ValidationError

from maestrale.engines.openai_compat.client import UpstreamClient
from maestrale.engines.openai_compat.options import config_from_spec
from maestrale.engines.openai_compat.wire import invalid_response
from maestrale.engines.specs import CatalogError, ModelSpec
from maestrale.engines.transcription_types import (
    LanguageDetected,
    Segment,
    TranscriptionEvent,
    TranscriptionRequest,
    TranscriptionResult,
    Word,
)
from maestrale.engines.types import Usage

__all__ = ["Dialect", "TranscriptionPassthrough", "create_engine"]

Dialect = Literal["mistral", "openai"]
_PATH = "/audio/transcriptions"
# Whisper-style servers name the language in English; the platform answers with a code.
_LANGUAGE_TABLE = """
english:en french:fr german:de spanish:es italian:it portuguese:pt dutch:nl hindi:hi
japanese:ja chinese:zh korean:ko russian:ru arabic:ar polish:pl turkish:tr
"""
_LANGUAGE_CODES = {
    name: code for name, code in (entry.split(":") for entry in _LANGUAGE_TABLE.split())
}


def _quoted(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', "%22").replace("\r", "").replace("\n", "")


def multipart_body(
    fields: list[tuple[str, str]], filename: str, content_type: str | None, audio: bytes
) -> tuple[bytes, str]:
    """A multipart/form-data body of `fields` and the file part; and its Content-Type."""
    boundary = uuid.uuid4().hex
    out = bytearray()
    for name, value in fields:
        out += f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n'.encode()
        out += value.encode() + b"\r\n"
    out += (
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; '
        f'filename="{_quoted(filename)}"\r\n'
        f"Content-Type: {content_type or 'application/octet-stream'}\r\n\r\n"
    ).encode()
    out += audio + f"\r\n--{boundary}--\r\n".encode()
    return bytes(out), f"multipart/form-data; boundary={boundary}"


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _words(items: Any) -> list[Word]:
    words: list[Word] = []
    for item in items if isinstance(items, list) else ():
        if not isinstance(item, dict):
            continue
        text = item.get("word", item.get("text"))
        start, end = _number(item.get("start")), _number(item.get("end"))
        if isinstance(text, str) and start is not None and end is not None:
            words.append(Word(text.strip(), start, end, _number(item.get("probability"))))
    return words


def _segments(items: Any) -> list[Segment]:
    segments: list[Segment] = []
    for item in items if isinstance(items, list) else ():
        if not isinstance(item, dict) or not isinstance(item.get("text"), str):
            continue
        start, end = _number(item.get("start")), _number(item.get("end"))
        speaker = item.get("speaker_id")
        segments.append(
            Segment(
                text=item["text"].strip(),
                start=start or 0.0,
                end=end or 0.0,
                score=_number(item.get("score")),
                speaker_id=str(speaker) if speaker is not None else None,
                words=_words(item.get("words")),
            )
        )
    return segments


def parse_result(answer: Any) -> TranscriptionResult:
    """The upstream's JSON answer (platform or verbose_json dialect) as a result."""
    if not isinstance(answer, dict) or not isinstance(answer.get("text"), str):
        raise invalid_response("a transcription without `text`")
    usage = answer.get("usage") if isinstance(answer.get("usage"), dict) else {}
    assert isinstance(usage, dict)
    seconds = _number(usage.get("prompt_audio_seconds")) or _number(answer.get("duration")) or 0.0
    language = answer.get("language")
    if isinstance(language, str):
        language = _LANGUAGE_CODES.get(language.lower(), language)
    else:
        language = None
    segments = _segments(answer.get("segments"))
    words = _words(answer.get("words"))
    if words and segments and not any(segment.words for segment in segments):
        for segment in segments:  # top-level words (verbose_json) put back in their segments
            segment.words = [w for w in words if segment.start <= w.start < segment.end]
    tokens = {key: usage.get(key) for key in ("prompt_tokens", "completion_tokens")}
    return TranscriptionResult(
        text=answer["text"].strip(),
        language=language,
        segments=segments,
        audio_seconds=seconds,
        usage=Usage(
            prompt_tokens=int(tokens["prompt_tokens"] or 0),
            completion_tokens=int(tokens["completion_tokens"] or 0),
        ),
    )


class TranscriptionPassthrough:
    """Forwards transcriptions to an upstream's /audio/transcriptions over one pooled client."""

    def __init__(self, client: UpstreamClient, dialect: Dialect) -> None:
        self._client = client
        self._dialect = dialect

    def fields(self, request: TranscriptionRequest) -> list[tuple[str, str]]:
        """The form fields sent beside the file, in this upstream's dialect."""
        fields = [("model", request.model)]
        if request.language:
            fields.append(("language", request.language))
        if request.temperature is not None:
            fields.append(("temperature", repr(request.temperature)))
        if self._dialect == "openai":
            fields.append(("response_format", "verbose_json"))
            fields += [("timestamp_granularities[]", g) for g in request.timestamp_granularities]
            return fields
        fields += [("timestamp_granularities", g) for g in request.timestamp_granularities]
        fields += [("context_bias", term) for term in request.context_bias]
        if request.diarize:
            fields.append(("diarize", "true"))
        return fields

    async def transcribe(self, request: TranscriptionRequest) -> TranscriptionResult:
        """POST the audio and the fields; the upstream's failures are `EngineError`s."""
        body, content_type = multipart_body(
            self.fields(request), request.filename, request.content_type, request.audio
        )
        return parse_result(await self._client.post(_PATH, body, {"content-type": content_type}))

    async def transcribe_stream(
        self, request: TranscriptionRequest
    ) -> AsyncIterator[TranscriptionEvent]:
        """One plain upstream call, its answer sent as the stream's events."""
        result = await self.transcribe(request)
        if result.language:
            yield LanguageDetected(result.language)
        for segment in result.segments:
            yield segment
        yield result

    async def aclose(self) -> None:
        """Close the pooled connections to the upstream."""
        await self._client.aclose()


def create_engine(spec: ModelSpec) -> TranscriptionPassthrough:
    """Factory of the engine registry: the `openai_compat` configuration plus `dialect`."""
    options = dict(spec.options)
    dialect = options.pop("dialect", "mistral")
    if dialect not in ("mistral", "openai"):
        raise CatalogError(
            f"model {spec.id!r}: dialect must be 'mistral' or 'openai', not {dialect!r}"
        )
    try:
        config = config_from_spec(spec.model_copy(update={"options": options}))
    except ValidationError as exc:  # pragma: no cover - config_from_spec reports its own
        raise CatalogError(str(exc)) from exc
    return TranscriptionPassthrough(UpstreamClient(config), dialect)
