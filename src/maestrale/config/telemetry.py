"""The settings of the telemetry store: the OTLP receiver's limits, its ingestion queue, the
server's own spans and retention. `Settings` inherits them."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings

MIB = 1024 * 1024


class TelemetrySettings(BaseSettings):
    telemetry_max_body_bytes: int = Field(
        default=16 * MIB, ge=1024, description="largest OTLP request body as sent; 413 beyond"
    )
    telemetry_max_decompressed_bytes: int = Field(
        default=64 * MIB,
        ge=1024,
        description="largest OTLP body once gunzipped (no gzip bomb); 413 beyond",
    )
    telemetry_max_attributes: int = Field(
        default=256,
        ge=1,
        le=100_000,
        description="attributes kept per span, event, link or log record; the rest are dropped"
        " and counted in `maestrale.dropped_attributes_count`",
    )
    telemetry_max_attribute_length: int = Field(
        default=256 * 1024,
        ge=16,
        description="characters kept of a string attribute value (longer ones are cut)",
    )
    telemetry_max_attribute_depth: int = Field(
        default=16, ge=1, le=64, description="nesting of array/kvlist values kept (deeper: null)"
    )
    telemetry_queue_records: int = Field(
        default=200_000,
        ge=1,
        description="spans and logs waiting to be written, per process; a batch beyond: 429",
    )
    telemetry_self_traces: bool = Field(
        default=True,
        description="when the server traces itself, its spans of a request made with a"
        " workspace's key land in that workspace's telemetry store too",
    )
    telemetry_retention_days: float = Field(
        default=30, gt=0, description="spans, logs and traces older than this are purged"
    )
    telemetry_purge_seconds: float = Field(
        default=3600, gt=0, description="how often the purge of old telemetry runs"
    )


# The routes of the OTLP receiver (OTLP/HTTP's own paths, and the official workflow worker's).
OTLP_PATHS = (
    "/v1/traces",
    "/v1/logs",
    "/telemetry/v1/traces",
    "/telemetry/v1/logs",
    "/telemetry/v1/metrics",
)
