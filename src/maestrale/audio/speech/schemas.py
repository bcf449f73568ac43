"""Wire shapes of /v1/audio/speech: the platform SDK's `SpeechRequest` and the fields OpenAI's
`audio.speech.create` sends (`voice`, `speed`, `instructions`, `stream_format`), one body."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from maestrale.audio.speech.formats import FormatName


class VoiceRef(BaseModel):
    """OpenAI's custom voice object: `{"id": "..."}`."""

    model_config = ConfigDict(extra="ignore")

    id: str = Field(min_length=1, max_length=256)


class SpeechBody(BaseModel):
    """A speech request. `model` null: the catalog's first speech model (a real engine before the
    builtin test double)."""

    model_config = ConfigDict(extra="ignore")

    input: str = Field(description="text to speak")
    model: str | None = None
    voice_id: str | None = Field(
        default=None, max_length=256, description="a preset voice of the model or a custom voice"
    )
    voice: str | VoiceRef | None = Field(default=None, description="OpenAI's name for `voice_id`")
    ref_audio: str | None = Field(
        default=None, description="base64 audio sample: speak in its voice, for this call only"
    )
    response_format: FormatName | None = Field(default=None, description="default mp3")
    stream: bool = False
    stream_format: Literal["sse", "audio"] | None = Field(
        default=None, description="OpenAI's: `sse` for audio events, `audio` for raw bytes"
    )
    speed: float | None = Field(default=None, ge=0.25, le=4.0)
    instructions: str | None = None
    expressiveness: float | None = Field(default=None, ge=1.0, allow_inf_nan=False)
    phoneme_hints: dict[str, list[str]] | None = None
    conversation_history: list[dict[str, Any]] | None = None
    metadata: dict[str, Any] | None = None
    prompt_cache_key: str | None = None

    def voice_name(self) -> tuple[str | None, str]:
        """The requested voice and the field it came in."""
        if self.voice_id is not None:
            return self.voice_id, "voice_id"
        if isinstance(self.voice, VoiceRef):
            return self.voice.id, "voice"
        return self.voice, "voice"


class SpeechResponse(BaseModel):
    audio_data: str = Field(description="the audio, base64")


class SpeechUsageInfo(BaseModel):
    prompt_tokens: int = Field(description="characters spoken")
    completion_tokens: int = 0
    total_tokens: int
    prompt_audio_seconds: int | None = None
