"""The TOML model catalog: the specs of the models that clients may call (on which engine, at
what price), which the engines serve and the catalog group lists."""

from __future__ import annotations

import tomllib
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

# Capability flags of the wire model card (ModelCapabilities); other capability names
# (e.g. "embeddings") are internal and decide which endpoints a model serves.
CARD_CAPABILITIES = (
    "completion_chat",
    "function_calling",
    "reasoning",
    "completion_fim",
    "fine_tuning",
    "vision",
    "ocr",
    "classification",
    "moderation",
    "audio",
    "audio_transcription",
    "audio_transcription_realtime",
    "audio_speech",
    "unified_resources",
)
# "classifier_training": the base of classifier fine-tuning jobs, which classifies nothing itself
# (its card says so) and lends its embeddings model to the heads its jobs train.
INTERNAL_CAPABILITIES = ("embeddings", "classifier_training")


class Price(BaseModel):
    model_config = ConfigDict(extra="forbid")

    input_per_million: float = Field(default=0.0, ge=0)
    output_per_million: float = Field(default=0.0, ge=0)
    # Of fine-tuning jobs on the model: per million tokens trained (steps x tokens per step).
    training_per_million: float = Field(default=0.0, ge=0)


class TrainingAdvice(BaseModel):
    """What fine-tuning a base model needs to teach it anything (its LoRA learns at rates and
    lengths unlike the platform's large models): the default learning rate of its jobs, and the
    least rate and steps below which a job is warned that it will learn little."""

    model_config = ConfigDict(extra="forbid")

    learning_rate: float = Field(gt=0, le=1)
    min_learning_rate: float = Field(gt=0, le=1)
    min_training_steps: int = Field(default=1, ge=1)


class ModelSpec(BaseModel):
    """One `[[models]]` entry."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1, max_length=200)
    aliases: list[str] = Field(default_factory=list)
    engine: str
    enabled: bool = True
    optional: bool = Field(
        default=False, description="skip (with a warning) when the engine is not installed"
    )
    name: str | None = None
    description: str | None = None
    base_url: str | None = None
    upstream_model: str | None = None
    api_key_env: str | None = None
    options: dict[str, Any] = Field(default_factory=dict)
    capabilities: list[str] = Field(default_factory=list)
    max_context_length: int = Field(default=32768, gt=0)
    price: Price = Field(default_factory=Price)
    owned_by: str = "maestrale"
    created: int = 0
    default_model_temperature: float | None = None
    deprecation: str | None = None
    deprecation_replacement_model: str | None = None
    # Embeddings trained so that a prefix of the vector is an embedding too (Matryoshka): a
    # smaller output_dimension (OpenAI's `dimensions`) is the vector cut and renormalized.
    matryoshka: bool = False
    training: TrainingAdvice | None = None

    @field_validator("capabilities")
    @classmethod
    def _known_capabilities(cls, value: list[str]) -> list[str]:
        unknown = sorted(set(value) - set(CARD_CAPABILITIES) - set(INTERNAL_CAPABILITIES))
        if unknown:
            raise ValueError(f"unknown capabilities: {', '.join(unknown)}")
        return value

    def has(self, capability: str) -> bool:
        return capability in self.capabilities

    @property
    def test_double(self) -> bool:
        """Served by one of the builtin test doubles (`builtin`, `builtin_speech`...), not by a
        real engine."""
        return self.engine.startswith("builtin")


class CatalogError(Exception):
    """The catalog file is unreadable or invalid; the message names the file and the entry."""


def _read(text: str, origin: str) -> list[ModelSpec]:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise CatalogError(f"{origin}: invalid TOML: {exc}") from exc
    entries = data.get("models", [])
    if not isinstance(entries, list):
        raise CatalogError(f"{origin}: `models` must be an array of tables ([[models]])")
    specs = []
    for i, entry in enumerate(entries):
        try:
            specs.append(ModelSpec.model_validate(entry))
        except ValidationError as exc:
            raise CatalogError(f"{origin}: models[{i}]: {exc}") from exc
    return specs


def load_catalog(path: Path | None = None) -> list[ModelSpec]:
    """The built-in defaults with the file's entries merged over them (same id replaces)."""
    defaults = resources.files("maestrale.engines").joinpath("defaults.toml").read_text("utf-8")
    merged = {spec.id: spec for spec in _read(defaults, "built-in defaults")}
    if path is not None:
        try:
            text = path.read_text("utf-8")
        except OSError as exc:
            raise CatalogError(f"cannot read model catalog {path}: {exc}") from exc
        for spec in _read(text, str(path)):
            merged.pop(spec.id, None)
            merged[spec.id] = spec
    specs = [spec for spec in merged.values() if spec.enabled]
    _check_names(specs)
    return specs


def _check_names(specs: list[ModelSpec]) -> None:
    seen: dict[str, str] = {}
    for spec in specs:
        for name in (spec.id, *spec.aliases):
            if name in seen and seen[name] != spec.id:
                raise CatalogError(f"model name {name!r} is used by {seen[name]!r} and {spec.id!r}")
            seen[name] = spec.id
