"""The settings of inbound webhooks: the receiving endpoint's body limit and per-webhook rate,
the replay window, the loop depth at which triggered work stops, and how long a webhook's
settings stay cached in a process. `Settings` inherits them."""

from __future__ import annotations

import re

from pydantic import Field
from pydantic_settings import BaseSettings

MIB = 1024 * 1024

# The public receiving path of a webhook (no API key there: the signature is the
# authentication). Its body is streamed to the route, which counts it against
# `inbound_max_body_bytes` (see `core.middleware.BodyLimits.upload_patterns`).
RECEIVE_PATH = "/v1/webhooks/{webhook_id}/receive"
RECEIVE_PATTERN = re.compile(r"^/v1/webhooks/[^/]+/receive$")


class InboundSettings(BaseSettings):
    inbound_max_body_bytes: int = Field(
        default=MIB, ge=1024, le=64 * MIB, description="largest webhook delivery body; 413 beyond"
    )
    inbound_rate_per_second: float = Field(
        default=50,
        gt=0,
        description="deliveries accepted per second and webhook, per process (token bucket);"
        " 429 with Retry-After beyond",
    )
    inbound_burst: int = Field(
        default=100, ge=1, description="deliveries a webhook may send at once above its rate"
    )
    inbound_replay_window_seconds: int = Field(
        default=86400,
        ge=1,
        le=30 * 86400,
        description="how long a delivery's signature and event id are remembered to refuse"
        " replays, for webhooks without a validity period",
    )
    trigger_max_depth: int = Field(
        default=3,
        ge=1,
        le=100,
        description="deliveries caused by work that a delivery started, nested this deep, are"
        " cut (508) instead of starting more work",
    )
    inbound_cache_ttl_seconds: float = Field(
        default=5,
        ge=0,
        le=300,
        description="how long a process keeps a webhook's settings and secret in memory (a"
        " webhook deleted on another replica stops within this time)",
    )
    inbound_refused_rows_per_minute: int = Field(
        default=20,
        ge=0,
        le=10_000,
        description="refused deliveries (bad signature, stale, replayed, loop cut) recorded per"
        " webhook and minute, per process; the rest are only counted in the log",
    )
