"""Catalog `options` of the `openai_compat` engine, validated once when the engine is built."""

from __future__ import annotations

import os
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from maestrale.engines.specs import CatalogError, ModelSpec


class EngineOptions(BaseModel):
    """The `options` table of an `openai_compat` model; unknown keys are refused (typos)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    timeout: float = Field(default=600.0, gt=0, description="total seconds per upstream call")
    connect_timeout: float = Field(default=5.0, gt=0)
    max_connections: int = Field(default=100, ge=1)
    max_keepalive_connections: int | None = Field(
        default=None, ge=0, description="idle connections kept open; default max_connections"
    )
    retries: int = Field(default=2, ge=0, le=10)
    retry_backoff: float = Field(default=0.1, ge=0, description="first retry delay, doubled after")
    fim_api: Literal["completions", "mistral"] = "completions"
    headers: dict[str, str] = Field(default_factory=dict, description="extra static headers")


class UpstreamConfig(BaseModel):
    """Everything an engine needs to reach its upstream, resolved from a catalog entry."""

    model_config = ConfigDict(frozen=True)

    base_url: str
    api_key: str | None = Field(default=None, repr=False)
    options: EngineOptions = Field(default_factory=EngineOptions)


def config_from_spec(spec: ModelSpec) -> UpstreamConfig:
    """Resolve base URL, key and options of `spec`; raise `CatalogError` naming the model."""
    if not spec.base_url:
        raise CatalogError(f"model {spec.id!r}: the openai_compat engine needs a base_url")
    if not spec.base_url.startswith(("http://", "https://")):
        raise CatalogError(
            f"model {spec.id!r}: base_url must start with http:// or https://, "
            f"got {spec.base_url!r}"
        )
    try:
        options = EngineOptions.model_validate(spec.options)
    except ValidationError as exc:
        # Only locations and messages: the raw input may hold header values that are secrets.
        problems = "; ".join(
            f"{'.'.join(str(part) for part in error['loc']) or 'options'}: {error['msg']}"
            for error in exc.errors()
        )
        raise CatalogError(
            f"model {spec.id!r}: invalid openai_compat options: {problems}"
        ) from None
    # Read once at start-up: a key rotated in the environment needs a restart, as any setting.
    api_key = os.environ.get(spec.api_key_env) if spec.api_key_env else None
    return UpstreamConfig(base_url=spec.base_url, api_key=api_key or None, options=options)
