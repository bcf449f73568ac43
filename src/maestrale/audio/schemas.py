"""Wire models of transcription: the request's form fields and the response (for the API docs;
responses are built as plain dicts on the hot path)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

Granularity = Literal["segment", "word"]
# Form fields that may repeat (`name=a&name=b`, or `name[]=a`): they are read as lists.
ARRAY_FIELDS = frozenset({"context_bias", "timestamp_granularities"})


class TranscriptionForm(BaseModel):
    """The fields of AudioTranscriptionRequest(Stream) besides the `file` part."""

    model_config = ConfigDict(extra="ignore")

    model: str = Field(min_length=1, max_length=200)
    file_url: str | None = Field(default=None, max_length=16 * 1024 * 1024)
    file_id: str | None = Field(default=None, max_length=200)
    language: str | None = Field(default=None, max_length=32)
    temperature: float | None = Field(default=None, ge=0, le=2)
    stream: bool = False
    diarize: bool = False
    context_bias: list[str] = Field(default_factory=list, max_length=1000)
    timestamp_granularities: list[Granularity] = Field(default_factory=list)
    # mistralai 3.x: reference audio of known speakers, to name the diarized ones. The local
    # diarizer cannot match voices: refused when given, not ignored.
    speaker_references: Any = None

    @field_validator("speaker_references")
    @classmethod
    def _no_references(cls, value: Any) -> None:
        if value not in (None, "", "null", "{}", {}):
            raise ValueError(
                "speaker_references is not supported: the local diarizer cannot match "
                "reference voices (diarized speakers come back as speaker ids)"
            )
        return None

    @field_validator("file_url", "file_id", "language", mode="before")
    @classmethod
    def _blank_is_none(cls, value: Any) -> Any:
        # Form clients send "" (or "null") for a field they mean to leave out.
        if isinstance(value, str) and value.strip() in ("", "null"):
            return None
        return value


class UsageInfo(BaseModel):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    prompt_audio_seconds: int | None = None


class TranscriptionSegmentChunk(BaseModel):
    model_config = ConfigDict(extra="allow")

    type: Literal["transcription_segment"] = "transcription_segment"
    text: str
    start: float
    end: float
    score: float | None = None
    speaker_id: str | None = None


class TranscriptionResponse(BaseModel):
    """What POST /v1/audio/transcriptions answers when `stream` is false."""

    model: str
    text: str
    language: str | None
    segments: list[TranscriptionSegmentChunk] = Field(default_factory=list)
    usage: UsageInfo
