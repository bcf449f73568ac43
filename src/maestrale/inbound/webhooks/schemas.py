"""Wire models of the /v1/webhooks group (the SDK's CreateWebhook, Webhook and
WebhookSigningSecret) and of its deliveries (an extension: not in the SDK)."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from maestrale.core.clock import as_utc
from maestrale.core.regex import PatternError, compile_pattern
from maestrale.inbound.webhooks.presets import preset_of

Provider = Literal["slack", "github", "notion", "lucca", "linear", "microsoft", "ashby", "custom"]
HashAlgorithm = Literal["sha256", "sha1"]
Encoding = Literal["hex", "base64"]
OwnerType = Literal["workspace", "user"]

MAX_REGEX = 512
MAX_PATTERN = 256
MAX_SECRET = 4096
MAX_VALIDITY = 86400 * 7
# RFC 9110 token characters: what a header name may hold.
_HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$")
_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")
PLACEHOLDERS = frozenset({"body", "timestamp"})
# `body.a.b` (keys of the JSON body) or `headers.Name`.
_EVENT_PATH = re.compile(
    r"^(body(\.[^.\s]{1,128}){1,16}|headers\.[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128})$"
)


def _regex(value: str | None) -> str | None:
    if value is None:
        return None
    try:
        compiled = compile_pattern(value)
    except PatternError as exc:
        raise ValueError(f"not a regular expression RE2 can run: {exc}") from None
    if compiled.groups > 1:
        raise ValueError("at most one capturing group (the value to extract)")
    return value


class WebhookCreate(BaseModel):
    """The SDK's CreateWebhook. Unset settings are filled from the provider's preset."""

    model_config = ConfigDict(extra="ignore")

    provider: Provider
    name: str = Field(min_length=1, max_length=256)
    owner_type: OwnerType = "workspace"
    secret: str | None = Field(default=None, min_length=1, max_length=MAX_SECRET)
    encryption_key: str | None = Field(default=None, min_length=1, max_length=MAX_SECRET)
    expires_at: datetime | None = None
    signature_hash_algorithm: HashAlgorithm | None = None
    signature_header_name: str | None = Field(default=None, pattern=_HEADER_NAME.pattern)
    validity_period_second: int | None = Field(default=None, ge=1, le=MAX_VALIDITY)
    signature_extractor_regex: str | None = Field(default=None, min_length=1, max_length=MAX_REGEX)
    timestamp_extractor_regex: str | None = Field(default=None, min_length=1, max_length=MAX_REGEX)
    signature_payload_pattern: str | None = Field(
        default=None, min_length=1, max_length=MAX_PATTERN
    )
    signature_encoding: Encoding | None = None
    success_status_code: int | None = Field(default=None, ge=200, le=299)
    event_type_path: str | None = Field(default=None, max_length=300, pattern=_EVENT_PATH.pattern)
    # Not in the SDK: filled from the preset only.
    timestamp_header_name: str | None = Field(default=None, exclude=True)
    event_id_header_name: str | None = Field(default=None, exclude=True)

    _regexes = field_validator("signature_extractor_regex", "timestamp_extractor_regex")(_regex)

    @field_validator("expires_at")
    @classmethod
    def _utc(cls, value: datetime | None) -> datetime | None:
        return None if value is None else as_utc(value)

    @field_validator("signature_payload_pattern")
    @classmethod
    def _payload(cls, value: str | None) -> str | None:
        if value is None:
            return None
        names = _PLACEHOLDER.findall(value)
        unknown = sorted(set(names) - PLACEHOLDERS)
        if unknown:
            raise ValueError(
                f"unknown placeholder {{{unknown[0]}}}: only {{body}} and {{timestamp}}"
            )
        if "body" not in names:
            raise ValueError("the pattern must contain {body}")
        return value

    @model_validator(mode="after")
    def _preset(self) -> WebhookCreate:
        """Fill the unset settings from the provider's preset, then check they fit together."""
        preset = preset_of(self.provider)
        for field in (
            "signature_header_name",
            "signature_extractor_regex",
            "signature_hash_algorithm",
            "signature_encoding",
            "signature_payload_pattern",
            "timestamp_extractor_regex",
            "validity_period_second",
            "event_type_path",
        ):
            if getattr(self, field) is None:
                setattr(self, field, getattr(preset, field))
        self.timestamp_header_name = preset.timestamp_header_name
        self.event_id_header_name = preset.event_id_header_name
        if self.success_status_code is None:
            self.success_status_code = 200
        if self.signature_header_name is None:
            raise ValueError(f"signature_header_name is required for provider {self.provider}")
        if self.secret is None and self.provider != "notion":
            # Notion sends its verification token (the secret) in its first delivery.
            raise ValueError(f"secret is required for provider {self.provider}")
        has_timestamp = self.timestamp_header_name or self.timestamp_extractor_regex
        needs_timestamp = "{timestamp}" in (self.signature_payload_pattern or "")
        if (needs_timestamp or self.validity_period_second) and not has_timestamp:
            raise ValueError(
                "{timestamp} and validity_period_second need timestamp_extractor_regex (run over"
                " the signature header's value) for this provider"
            )
        return self


class WebhookOut(BaseModel):
    """The SDK's Webhook: every key present, null where nullable."""

    id: str
    creator_id: str
    organization_id: str
    workspace_id: str
    owner_type: str
    provider: str
    name: str
    url: str
    http_method: str
    url_verified: bool | None
    signature_hash_algorithm: str | None
    signature_header_name: str | None
    validity_period_second: int | None
    signature_extractor_regex: str | None
    timestamp_extractor_regex: str | None
    signature_payload_pattern: str | None
    signature_encoding: str | None
    success_status_code: int | None
    event_type_path: str | None
    expires_at: datetime | None
    created_at: datetime
    updated_at: datetime


class SigningSecretOut(BaseModel):
    """The SDK's WebhookSigningSecret."""

    signing_secret: str


class DeliveryOut(BaseModel):
    """One delivery a webhook received: when, verified or not, its status, and what it
    started (each entry as the triggers wrote it)."""

    id: str
    webhook_id: str
    received_at: datetime
    status: str
    verified: bool
    event_type: str | None
    event_id: str | None
    depth: int
    started: list[dict[str, Any]]
    dispatched_at: datetime | None


class DeliveryPage(BaseModel):
    data: list[DeliveryOut]
    next_cursor: str | None
