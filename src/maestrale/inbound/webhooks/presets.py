"""How each provider signs its webhooks: the settings its preset fills when the creator leaves
them unset. `custom` (and the providers without a known scheme) take everything from the
settings, with HMAC-SHA256, hex, over the body unless told otherwise.

Where the timestamp is read (`{timestamp}` in the payload, the validity period): from the
preset's timestamp header (Slack's `X-Slack-Request-Timestamp`), else from the signature
header's value through `timestamp_extractor_regex` (Stripe's `t=...,v1=...`). The extractor
runs over the timestamp header too when both are there. A regex's first group is the value
(the whole match when it has no group)."""

from __future__ import annotations

from dataclasses import dataclass

# The SDK's enums (WebhookProvider, WebhookSignatureHashAlgorithm, WebhookSignatureEncoding).
PROVIDERS = ("slack", "github", "notion", "lucca", "linear", "microsoft", "ashby", "custom")
HASH_ALGORITHMS = ("sha256", "sha1")
ENCODINGS = ("hex", "base64")

DEFAULT_ALGORITHM = "sha256"
DEFAULT_ENCODING = "hex"
DEFAULT_PAYLOAD = "{body}"
DEFAULT_SUCCESS_STATUS = 200


@dataclass(frozen=True, slots=True)
class Preset:
    signature_header_name: str | None = None
    signature_extractor_regex: str | None = None
    signature_hash_algorithm: str = DEFAULT_ALGORITHM
    signature_encoding: str = DEFAULT_ENCODING
    signature_payload_pattern: str = DEFAULT_PAYLOAD
    timestamp_header_name: str | None = None
    timestamp_extractor_regex: str | None = None
    validity_period_second: int | None = None
    event_type_path: str | None = None
    event_id_header_name: str | None = None


PRESETS: dict[str, Preset] = {
    "github": Preset(
        signature_header_name="X-Hub-Signature-256",
        signature_extractor_regex=r"sha256=(.*)",
        event_type_path="headers.X-GitHub-Event",
        event_id_header_name="X-GitHub-Delivery",
    ),
    "slack": Preset(
        signature_header_name="X-Slack-Signature",
        signature_extractor_regex=r"v0=(.*)",
        signature_payload_pattern="v0:{timestamp}:{body}",
        timestamp_header_name="X-Slack-Request-Timestamp",
        validity_period_second=300,
        event_type_path="body.event.type",
    ),
    "notion": Preset(
        signature_header_name="X-Notion-Signature",
        signature_extractor_regex=r"sha256=(.*)",
        event_type_path="body.type",
    ),
    "linear": Preset(
        signature_header_name="Linear-Signature",
        event_type_path="body.type",
        event_id_header_name="Linear-Delivery",
    ),
}
CUSTOM = Preset()


def preset_of(provider: str) -> Preset:
    return PRESETS.get(provider, CUSTOM)
