"""The `openai_compat_speech` engine: speech synthesis forwarded to an upstream's
POST {base_url}/audio/speech (OpenAI, an upstream platform, speaches, Kokoro-FastAPI, vLLM...),
its audio read as it streams in.

The catalog entry takes the `openai_compat` fields (`base_url`, `api_key_env`, `upstream_model`,
`options` with timeouts and retries) plus options of its own:
- `dialect`: "openai" (default) sends `{model, input, voice, response_format: "pcm", speed}` and
  reads the body as raw PCM; "mistral" (the platform's) sends `{model, input, voice_id,
  ref_audio, response_format: "pcm", stream: true}` and reads the `speech.audio.delta` events'
  base64 `audio_data`. The platform has no speed: a speed other than 1 is refused (400).
- `sample_rate`: the rate of the upstream's PCM (default 24000, OpenAI's and the platform's).
- `sample_format`: "s16le" (default for "openai") or "f32le" (default for "mistral": the
  platform's PCM is 32-bit float); converted to 16-bit PCM here.
- `voices`: the upstream's voices, the default first: names, or tables of `id`, `name`,
  `languages`, `gender`, `description`. Default: OpenAI's voices for "openai"; none for
  "mistral", where any voice id goes up as it came (the platform knows its voices and custom
  voices) and no voice means the upstream's default. With a list, another voice is a 400.
- `clones`: the upstream takes a custom voice's sample, sent as `ref_audio` (base64) in either
  dialect (default true for "mistral", false for "openai").

Audio goes out in chunks of at least `MIN_CHUNK_SECONDS` as it arrives (a chunk per sentence
where the upstream sends so), so the first is out long before the upstream has finished.
"""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from typing import Any, Literal

import numpy as np
import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from maestrale.engines.openai_compat.client import UpstreamClient
from maestrale.engines.openai_compat.options import config_from_spec
from maestrale.engines.openai_compat.wire import invalid_response
from maestrale.engines.specs import CatalogError, ModelSpec
from maestrale.engines.speech_text import speakable
from maestrale.engines.speech_types import EngineVoice, SpeechChunk, SpeechRequest
from maestrale.engines.types import EngineError

__all__ = ["SpeechOptions", "SpeechPassthrough", "create_engine"]

_PATH = "/audio/speech"
_AUDIO_HEADERS = {"accept": "*/*"}
OPENAI_VOICES = (
    "alloy",
    "ash",
    "ballad",
    "coral",
    "echo",
    "fable",
    "nova",
    "onyx",
    "sage",
    "shimmer",
    "verse",
)
# The least audio passed on at once (seconds): fewer, larger chunks than the network's.
MIN_CHUNK_SECONDS = 0.1


class VoiceEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1)
    name: str | None = None
    languages: list[str] = Field(default_factory=lambda: ["en"])
    gender: Literal["female", "male", "neutral"] | None = None
    description: str | None = None


class SpeechOptions(BaseModel):
    """The speech options of an `openai_compat_speech` entry (the rest are the client's)."""

    model_config = ConfigDict(extra="forbid")

    dialect: Literal["openai", "mistral"] = "openai"
    sample_rate: int = Field(default=24_000, ge=8_000, le=192_000)
    sample_format: Literal["s16le", "f32le"] | None = None
    voices: list[str | VoiceEntry] | None = None
    clones: bool | None = None


def _voice(entry: str | VoiceEntry) -> EngineVoice:
    if isinstance(entry, str):
        return EngineVoice(id=entry, name=entry)
    return EngineVoice(
        entry.id, entry.name or entry.id, tuple(entry.languages), entry.gender, entry.description
    )


class _Pcm:
    """Upstream bytes → 16-bit PCM chunks of at least `MIN_CHUNK_SECONDS`, whatever the cuts."""

    def __init__(self, rate: int, floats: bool) -> None:
        self._rate = rate
        self._width = 4 if floats else 2
        self._least = int(rate * MIN_CHUNK_SECONDS) * self._width
        self._buffer = bytearray()

    def _chunk(self, raw: bytes) -> SpeechChunk:
        if self._width == 4:
            samples = np.clip(np.nan_to_num(np.frombuffer(raw, dtype="<f4")), -1.0, 1.0)
            raw = (samples * 32767.0).astype("<i2").tobytes()
        return SpeechChunk(raw, self._rate)

    def feed(self, data: bytes) -> SpeechChunk | None:
        self._buffer += data
        if len(self._buffer) < self._least:
            return None
        whole = len(self._buffer) - len(self._buffer) % self._width
        raw = bytes(self._buffer[:whole])
        del self._buffer[:whole]
        return self._chunk(raw)

    def close(self) -> SpeechChunk | None:
        whole = len(self._buffer) - len(self._buffer) % self._width
        return self._chunk(bytes(self._buffer[:whole])) if whole else None


class SpeechPassthrough:
    """Forwards syntheses to an upstream's /audio/speech over one pooled client."""

    def __init__(self, client: UpstreamClient, options: SpeechOptions) -> None:
        self._client = client
        self._dialect = options.dialect
        self._rate = options.sample_rate
        self._floats = (options.sample_format or "") == "f32le" or (
            options.sample_format is None and options.dialect == "mistral"
        )
        default = OPENAI_VOICES if options.dialect == "openai" else ()
        entries = options.voices if options.voices is not None else list(default)
        self._voices = [_voice(entry) for entry in entries]
        self.clones = options.clones if options.clones is not None else options.dialect == "mistral"

    def voices(self, model: str) -> list[EngineVoice]:
        """The voices of the catalog entry (or OpenAI's), the default first."""
        return list(self._voices)

    def body(self, request: SpeechRequest) -> dict[str, Any]:
        """The upstream request of `request`, in this upstream's dialect."""
        voice = request.voice
        known = [v.id for v in self._voices]
        if voice is None and known:
            voice = known[0]
        elif voice is not None and known and voice not in known:
            raise EngineError(
                400,
                f"model {request.model} has no voice {voice!r} (voices: {', '.join(known)})",
                code="unknown_voice",
            )
        text = speakable(request.text)
        reference = base64.b64encode(request.reference).decode() if request.reference else None
        if self._dialect == "openai":
            body: dict[str, Any] = {"model": request.model, "input": text}
            body |= {"voice": voice, "response_format": "pcm", "speed": request.speed}
            if reference is not None:
                body["ref_audio"] = reference
            return body
        if request.speed != 1.0:
            raise EngineError(
                400, f"model {request.model} cannot change the speed", code="unsupported_speed"
            )
        body = {"model": request.model, "input": text, "response_format": "pcm"}
        body["stream"] = True
        if reference is not None:
            body["ref_audio"] = reference  # a cloned voice: the sample stands for the voice
        elif voice is not None:
            body["voice_id"] = voice
        return body

    async def synthesize(self, request: SpeechRequest) -> AsyncIterator[SpeechChunk]:
        """The upstream's audio, in chunks as it arrives."""
        body = self.body(request)
        pcm = _Pcm(self._rate, self._floats)
        pieces = self._openai(body) if self._dialect == "openai" else self._mistral(body)
        sent = False
        async for piece in pieces:
            chunk = pcm.feed(piece)
            if chunk is not None:
                sent = True
                yield chunk
        last = pcm.close()
        if last is not None:
            yield last
        elif not sent:
            raise invalid_response("no audio")

    def _openai(self, body: dict[str, Any]) -> AsyncIterator[bytes]:
        return self._client.stream_body(_PATH, body, _AUDIO_HEADERS)

    async def _mistral(self, body: dict[str, Any]) -> AsyncIterator[bytes]:
        async for data in self._client.stream(_PATH, body):
            if data == b"[DONE]":
                return
            try:
                event = orjson.loads(data)
            except orjson.JSONDecodeError:
                raise invalid_response("a speech event that is not JSON") from None
            kind = event.get("type") if isinstance(event, dict) else None
            if kind == "speech.audio.done":
                return
            if kind == "speech.audio.delta":
                audio = event.get("audio_data")
                if not isinstance(audio, str):
                    raise invalid_response("a speech.audio.delta without audio_data")
                try:
                    yield base64.b64decode(audio, validate=True)
                except ValueError:
                    raise invalid_response("audio_data that is not base64") from None

    async def aclose(self) -> None:
        """Close the pooled connections to the upstream."""
        await self._client.aclose()


def create_engine(spec: ModelSpec) -> SpeechPassthrough:
    """Factory of the engine registry: the `openai_compat` configuration plus the speech options."""
    own = set(SpeechOptions.model_fields)
    try:
        options = SpeechOptions.model_validate({k: v for k, v in spec.options.items() if k in own})
    except ValidationError as exc:
        raise CatalogError(f"model {spec.id!r}: invalid speech options: {exc}") from exc
    rest = {k: v for k, v in spec.options.items() if k not in own}
    config = config_from_spec(spec.model_copy(update={"options": rest}))
    return SpeechPassthrough(UpstreamClient(config), options)
