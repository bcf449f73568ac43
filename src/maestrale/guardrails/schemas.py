"""Wire models of guardrail configurations (the SDK's GuardrailConfig, ModerationLlmv1Config,
ModerationLlmv2Config and their category thresholds).

Like the rest of a request (docs/architecture.md §1), unknown fields are accepted and ignored, so
that a newer SDK's fields (a new category, say) are no 422; the known ones are checked (thresholds
in [0, 1], the action one of none and block). A configuration is stored and returned as the SDK
sends it (`wire()`: unset optional fields left out, defaults written out, unknown fields dropped).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

Threshold = Annotated[float, Field(ge=0, le=1)]
# What a check does when a category is flagged; absent means "block" (guardrails are block-only
# on the platform: a guardrail without an action must not be a silent one).
Action = Literal["none", "block"]
V1_MODEL = "mistral-moderation-2411"
V2_MODEL = "mistral-moderation-2603"
MAX_GUARDRAILS = 16


class _In(BaseModel):
    model_config = ConfigDict(extra="ignore")


class ModerationLlmv1CategoryThresholds(_In):
    sexual: Threshold | None = None
    hate_and_discrimination: Threshold | None = None
    violence_and_threats: Threshold | None = None
    dangerous_and_criminal_content: Threshold | None = None
    selfharm: Threshold | None = None
    health: Threshold | None = None
    financial: Threshold | None = None
    law: Threshold | None = None
    pii: Threshold | None = None


class ModerationLlmv2CategoryThresholds(_In):
    sexual: Threshold | None = None
    hate_and_discrimination: Threshold | None = None
    violence_and_threats: Threshold | None = None
    dangerous: Threshold | None = None
    criminal: Threshold | None = None
    selfharm: Threshold | None = None
    health: Threshold | None = None
    financial: Threshold | None = None
    law: Threshold | None = None
    pii: Threshold | None = None
    jailbreaking: Threshold | None = None


class _ModerationCheck(_In):
    model_name: str = Field(min_length=1, max_length=256)
    ignore_other_categories: bool = False
    action: Action | None = None

    def thresholds(self) -> dict[str, float]:
        """The categories given a custom threshold, with it."""
        given = getattr(self, "custom_category_thresholds", None)
        return {} if given is None else given.model_dump(exclude_none=True)


class ModerationLlmv1Config(_ModerationCheck):
    model_name: str = Field(default=V1_MODEL, min_length=1, max_length=256)
    custom_category_thresholds: ModerationLlmv1CategoryThresholds | None = None


class ModerationLlmv2Config(_ModerationCheck):
    model_name: str = Field(default=V2_MODEL, min_length=1, max_length=256)
    custom_category_thresholds: ModerationLlmv2CategoryThresholds | None = None


# The categories each kind of check knows, in the order of the spec.
V1_CATEGORIES: tuple[str, ...] = tuple(ModerationLlmv1CategoryThresholds.model_fields)
V2_CATEGORIES: tuple[str, ...] = tuple(ModerationLlmv2CategoryThresholds.model_fields)


class GuardrailConfig(_In):
    block_on_error: bool = False
    moderation_llm_v1: ModerationLlmv1Config | None = None
    moderation_llm_v2: ModerationLlmv2Config | None = None

    @model_validator(mode="after")
    def _checks_something(self) -> GuardrailConfig:
        if self.moderation_llm_v1 is None and self.moderation_llm_v2 is None:
            raise ValueError("a guardrail needs `moderation_llm_v1` or `moderation_llm_v2`")
        return self

    def wire(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_none=True)


Guardrails = Annotated[list[GuardrailConfig], Field(max_length=MAX_GUARDRAILS)]


def stored(configs: list[GuardrailConfig] | None) -> list[dict[str, Any]] | None:
    """Configurations as they are stored and returned (None stays None)."""
    return None if configs is None else [config.wire() for config in configs]
