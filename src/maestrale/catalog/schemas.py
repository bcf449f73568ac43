"""Wire models of the /v1/models group (shapes of the SDK's BaseModelCard, FTModelCard, ...)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class ModelCapabilities(BaseModel):
    completion_chat: bool = False
    function_calling: bool = False
    reasoning: bool = False
    completion_fim: bool = False
    fine_tuning: bool = False
    vision: bool = False
    ocr: bool = False
    classification: bool = False
    moderation: bool = False
    audio: bool = False
    audio_transcription: bool = False
    audio_transcription_realtime: bool = False
    audio_speech: bool = False
    unified_resources: bool = False


class FineTunedModelCapabilities(BaseModel):
    completion_chat: bool = True
    completion_fim: bool = False
    function_calling: bool = False
    fine_tuning: bool = False
    classification: bool = False


class _Card(BaseModel):
    id: str
    object: Literal["model"] = "model"
    created: int
    owned_by: str
    name: str | None = None
    description: str | None = None
    max_context_length: int
    aliases: list[str] = Field(default_factory=list)
    deprecation: str | None = None
    deprecation_replacement_model: str | None = None
    default_model_temperature: float | None = None
    capabilities: ModelCapabilities


class BaseModelCard(_Card):
    type: Literal["base"] = "base"


class FTModelCard(_Card):
    type: Literal["fine-tuned"] = "fine-tuned"
    job: str
    root: str
    root_version: str
    archived: bool
    workspace_id: str
    model_type: str


ModelCard = BaseModelCard | FTModelCard


class ModelList(BaseModel):
    object: Literal["list"] = "list"
    data: list[ModelCard]


class ModelUpdate(BaseModel):
    """Body of PATCH /v1/fine_tuning/models/{id}; unknown fields are ignored."""

    model_config = ConfigDict(extra="ignore")

    name: str | None = Field(default=None, max_length=200)
    description: str | None = Field(default=None, max_length=10_000)


class FineTunedModelOut(BaseModel):
    """CompletionFineTunedModel / ClassifierFineTunedModel, told apart by `model_type`."""

    id: str
    object: Literal["model"] = "model"
    created: int
    owned_by: str
    workspace_id: str
    root: str
    root_version: str
    archived: bool
    name: str | None
    description: str | None
    max_context_length: int
    aliases: list[str] = Field(default_factory=list)
    job: str | None
    model_type: Literal["completion", "classifier"]
    capabilities: FineTunedModelCapabilities
    classifier_targets: list[dict[str, Any]] | None = None


class ModelDeleted(BaseModel):
    id: str
    object: Literal["model"] = "model"
    deleted: bool = True


class ModelArchived(BaseModel):
    id: str
    object: Literal["model"] = "model"
    archived: bool
