"""Wire models of /v1/audio/agents and /v1/audio/sessions (the SDK 3.x models AudioAgent*,
AudioSession*, Audio*Config, VoiceAgent*Tool). Requests are lenient (unknown fields ignored);
responses carry every field the SDK requires."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

# The tool types of the SDK's union (AudioAgentConfigurationRequestTool).
TOOL_TYPES = (
    "function",
    "web_search",
    "document_library",
    "connector",
    "hang_up",
    "transfer_call",
)


class _In(BaseModel):
    model_config = ConfigDict(extra="ignore")


class LlmConfig(_In):
    model: str | None = Field(default=None, max_length=256)


class TtsConfig(_In):
    model: str | None = Field(default=None, max_length=256)
    voice_id: str | None = Field(default=None, max_length=256)
    expressiveness: float | None = Field(default=None, ge=0, le=1)


class TurnDetectionConfig(_In):
    start_threshold: float | None = Field(default=None, ge=0, le=1)
    eager_end_threshold: float | None = Field(default=None, ge=0, le=1)
    end_threshold: float | None = Field(default=None, ge=0, le=1)
    min_silence_ms: int | None = Field(default=None, ge=0, le=10_000)
    end_timeout_ms: int | None = Field(default=None, ge=0, le=60_000)


class SttConfig(_In):
    model: str | None = Field(default=None, max_length=256)
    language: str | None = Field(default=None, max_length=16)
    context_bias: list[str] | None = Field(default=None, max_length=100)
    target_streaming_delay_ms: int | None = Field(default=None, ge=0, le=10_000)
    turn_detection: TurnDetectionConfig | None = None


class InactivityConfig(_In):
    timeout_ms: int = Field(ge=0)
    max_reminders: int = Field(ge=0, le=100)
    messages: list[str] | None = Field(default=None, max_length=100)


class TurnConfig(_In):
    allow_interruptions: bool | None = None
    inactivity: InactivityConfig | None = None


class ToolIn(BaseModel):
    """A voice agent's tool, kept as given (its own fields) once its type is known."""

    model_config = ConfigDict(extra="allow")

    type: Literal[
        "function", "web_search", "document_library", "connector", "hang_up", "transfer_call"
    ] = "function"

    @model_validator(mode="after")
    def _fields_of_type(self) -> ToolIn:
        extra = self.model_extra or {}
        needs = {
            "function": "function",
            "document_library": "library_ids",
            "connector": "connector_id",
            "transfer_call": "destinations",
        }.get(self.type)
        if needs is not None and extra.get(needs) is None:
            raise ValueError(f"a {self.type} tool needs `{needs}`")
        if self.type == "function":
            function = extra["function"]
            if not isinstance(function, dict) or not isinstance(function.get("name"), str):
                raise ValueError("a function tool needs `function.name`")
        return self


class ConfigurationIn(_In):
    """AudioAgentConfigurationRequest (the setup fields of AudioSessionCreateRequest too)."""

    llm: LlmConfig | None = None
    tts: TtsConfig | None = None
    stt: SttConfig | None = None
    turn: TurnConfig | None = None
    instructions: str | None = Field(default=None, max_length=100_000)
    tools: list[ToolIn] | None = Field(default=None, max_length=128)
    welcome_message: str | None = Field(default=None, max_length=10_000)


class AudioAgentCreate(_In):
    name: str = Field(min_length=1, max_length=512)
    configuration: ConfigurationIn
    description: str | None = Field(default=None, max_length=10_000)


class AudioAgentUpdate(AudioAgentCreate):
    """A new version: the name and the whole configuration (what it omits takes defaults)."""


class AudioSessionCreate(ConfigurationIn):
    agent_id: str | None = Field(default=None, max_length=200)
    agent_version: int | None = None


class AudioAgentOut(BaseModel):
    id: str
    owner_id: str
    created_at: datetime
    updated_at: datetime
    name: str | None
    description: str | None
    version: int | None
    configuration: dict[str, Any] | None


class AudioAgentListPage(BaseModel):
    data: list[AudioAgentOut]
    next_page_token: str | None = None


class AudioAgentSessionSummary(BaseModel):
    id: str
    agent_id: str
    started_at: datetime | None
    duration: int | None  # seconds, once ended
    phone_number_id: str | None = None


class AudioAgentSessionListPage(BaseModel):
    data: list[AudioAgentSessionSummary]
    next_page_token: str | None = None


class AudioSessionCreated(BaseModel):
    id: str
    participant_token: str
    server_url: str
    created_at: datetime
    expires_at: datetime
    function_tools: list[dict[str, Any]] = Field(default_factory=list)


class AudioSessionOut(BaseModel):
    id: str
    status: Literal["active", "ended"]
    num_participants: int
    created_at: datetime
    phone_call: None = None
    transcripts: list[dict[str, Any]] | None
