"""Settings: `MAESTRALE_*` environment variables over an optional TOML file over defaults.

Command-line flags win over both. The TOML file is `--config FILE` or `MAESTRALE_CONFIG`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from maestrale.config.inbound import RECEIVE_PATTERN, InboundSettings
from maestrale.config.libraries import LibrarySettings
from maestrale.config.limits import LimitsConfig
from maestrale.config.telemetry import OTLP_PATHS, TelemetrySettings
from maestrale.config.tools import ToolSettings
from maestrale.config.workflows import WorkflowSettings
from maestrale.core.fetch import FetchPolicy
from maestrale.core.middleware import UPLOAD_PATTERNS, BodyLimits
from maestrale.core.outage_settings import OutageSettings
from maestrale.core.paths import private_dir


class Settings(
    OutageSettings,
    LibrarySettings,
    ToolSettings,
    WorkflowSettings,
    TelemetrySettings,
    InboundSettings,
):
    """The server's own settings: listening, storage, the job workers, limits and the knobs of
    each API group; the classes it inherits add those of one area each."""

    model_config = SettingsConfigDict(env_prefix="MAESTRALE_", extra="ignore")

    host: str = Field(default="127.0.0.1", description="address `serve` listens on")
    port: int = Field(default=8000, ge=0, le=65535, description="port `serve` listens on")
    data_dir: Path = Field(
        default=Path(".maestrale"),
        description="the SQLite database, the blobs and the generated keys; made private"
        " (mode 0700) at every start",
    )
    database_url: str | None = Field(
        default=None, description="SQLAlchemy async URL; SQLite under data_dir when unset."
    )
    database_pool_size: int = Field(
        default=10,
        ge=1,
        description="connections a process keeps in its pool to the database (as many more may"
        " open for a while under load)",
    )
    models: Path | None = Field(default=None, description="TOML model catalog merged over defaults")
    blob_dir: Path | None = Field(
        default=None,
        description="directory of the local blob backend; default: `blobs` in data_dir",
    )
    blob_backend: Literal["local", "s3"] = Field(
        default="local",
        description="where files and blobs are stored: a directory (local) or an S3-compatible"
        " bucket (s3, needs the `s3` extra)",
    )
    s3_bucket: str | None = Field(default=None, description="bucket of the s3 blob backend")
    s3_endpoint_url: str | None = Field(
        default=None, description="S3-compatible endpoint (MinIO, Ceph...); AWS when unset"
    )
    s3_region: str | None = Field(
        default=None,
        description="region of the s3 blob backend; credentials come from the standard AWS_*"
        " variables",
    )
    s3_prefix: str = Field(default="", description="key prefix inside the bucket")
    redis_url: str | None = Field(
        default=None,
        description="Redis shared by replicas: rate and spend counters, cache invalidations;"
        " unset: each `serve` keeps them (its processes share them through its hub)",
    )
    secret_key: SecretStr | None = Field(
        default=None, description="signs file URLs; generated into the data dir when unset"
    )
    previous_secret_keys: list[SecretStr] = Field(
        default_factory=list,
        description="earlier secret keys, still accepted to open the secrets sealed under them"
        " (connector credentials) until `maestrale secrets reseal` rewrites those",
    )
    public_url: str | None = Field(
        default=None,
        description="base URL of signed links and of the OAuth2 redirect of connectors"
        " (default: the request's own)",
    )
    max_upload_bytes: int = Field(
        default=512 * 1024 * 1024,
        ge=1,
        description="largest file stored through the Files API (413, nothing stored)",
    )
    batch_concurrency: int = Field(default=16, ge=1, le=1024, description="lines per job")
    batch_max_concurrency: int = Field(
        default=64, ge=1, le=4096, description="lines in flight per worker, all jobs together"
    )

    bootstrap_api_key: SecretStr | None = Field(
        default=None,
        description="the default workspace's API key created at first start (used only then)",
    )
    bootstrap_admin_key: SecretStr | None = Field(
        default=None,
        description="the default organization's admin key created at first start (used only then)",
    )

    auto_migrate: bool = Field(default=True, description="apply migrations when serving starts")
    workers: int | None = Field(
        default=None,
        ge=1,
        le=64,
        description="server processes of `serve`; default: one per usable CPU, at most 4",
    )
    hub_socket: Path | None = Field(
        default=None,
        description="set by `serve` for its server processes: the socket of their hub",
    )
    worker: bool = Field(default=True, description="run the in-process job worker in `serve`")
    worker_concurrency: int = Field(
        default=4, ge=1, le=256, description="jobs a worker runs at once"
    )
    jobs_per_workspace: int = Field(
        default=3,
        ge=1,
        le=4096,
        description="jobs of one workspace running at once on all"
        " workers together; workspaces take turns for the rest",
    )
    job_lease_seconds: float = Field(
        default=30.0,
        gt=0,
        description="a job's lease, renewed while it runs: a dead worker's jobs are resumed"
        " after this",
    )
    job_poll_seconds: float = Field(
        default=0.5, gt=0, description="how often a worker looks for due jobs when none wakes it"
    )
    worker_grace_seconds: float = Field(
        default=10.0, ge=0, description="at shutdown, running jobs finish or are handed back"
    )

    accounting_flush_seconds: float = Field(
        default=0.25, gt=0, le=1.0, description="usage and events are durable within this"
    )
    auth_cache_ttl: float = Field(
        default=1.0, ge=0, description="seconds a verified key is trusted before re-reading it"
    )
    limits: LimitsConfig = Field(
        default_factory=LimitsConfig, description="default rate and spend limits (see README)"
    )
    limits_cache_ttl: float = Field(
        default=1.0, ge=0, description="seconds an organization's limits are trusted in memory"
    )
    limits_reservation_ttl: float = Field(
        default=900.0, gt=0, description="a reservation never settled (crash) is freed after this"
    )
    limits_fail_open: bool = Field(
        default=False, description="admit calls when the counter store (Redis) is unreachable"
    )
    fetch_allow_private: bool = Field(
        default=False,
        description="let document_url / file_url reach loopback, private and link-local hosts",
    )
    fetch_max_bytes: int = Field(default=50 * 1024 * 1024, ge=1, description="per fetched URL")
    fetch_timeout_seconds: float = Field(default=30.0, gt=0, description="per fetched URL")
    fine_tuning_threads: int | None = Field(
        default=None,
        ge=1,
        le=512,
        description="CPU threads of a training (torch); default: every core of the machine",
    )
    fine_tuning_tokens_per_second: float = Field(
        default=7.5,
        gt=0,
        description="estimated training tokens per second of a job (checkpoints and the model's "
        "writing included; its start-up apart) until the workspace's finished jobs of the base "
        "measure it: two SmolLM2 jobs on 2 cores took 296 s and 466 s for 2070 and 3330 tokens",
    )
    ocr_max_pages: int = Field(default=1000, ge=1, description="pages one OCR request may process")
    ocr_annotation_model: str | None = Field(
        default=None,
        description="chat model of OCR annotations (default: the best real chat model, as the"
        " console's playground offers)",
    )
    search_index_summary_model: str | None = Field(
        default=None,
        description="chat model that writes search indexes' summary fields (default: the best "
        "real chat model, as the console's playground offers)",
    )
    audio_max_bytes: int = Field(
        default=100 * 1024 * 1024, ge=1, description="largest audio file to transcribe (413)"
    )
    audio_max_seconds: float = Field(
        default=3600.0, gt=0, description="longest audio to transcribe, in seconds (413)"
    )
    voice_sample_max_bytes: int = Field(
        default=10 * 1024 * 1024, ge=1, description="largest sample of a custom voice (413)"
    )
    voice_sample_max_seconds: float = Field(
        default=300.0, gt=0, description="longest sample of a custom voice, in seconds (400)"
    )
    speech_max_characters: int = Field(
        default=4096, ge=1, description="longest text one speech request may speak (400)"
    )
    similar_events_model: str = Field(
        default="mistral-embed", description="embeddings model of similar chat completion events"
    )
    similar_events_embed_limit: int = Field(
        default=2000, ge=1, description="events a similar-events request embeds at most (lazily)"
    )
    observability_search_timeout: float = Field(
        default=30.0,
        gt=0,
        description="seconds an observability search may run in the database (then 408)",
    )
    connector_allow_private: bool = Field(
        default=False,
        description="let connectors (MCP servers, their OAuth2 endpoints) be on loopback, private"
        " and link-local hosts",
    )
    connector_tool_timeout_seconds: float = Field(
        default=30.0, gt=0, le=3600, description="a connector tool call's limit, unless its own"
    )
    connector_cache_ttl: float = Field(
        default=1.0,
        ge=0,
        description="seconds a connector, the caller's policy and credentials are trusted in"
        " memory for a direct tool call (a change on another replica applies within it)",
    )
    connector_tools_ttl_seconds: float = Field(
        default=300.0, ge=0, description="how long a connector's tool list is answered from cache"
    )
    connector_oauth_return_origins: list[str] = Field(
        default_factory=list,
        description="origins (scheme://host[:port]) a connector's OAuth2 authorization may send"
        " the browser back to (`app_return_url`), besides this server's own",
    )
    gc_freeze: bool = Field(default=True, description="gc.freeze() after start-up")
    conversation_turn_lease_seconds: float = Field(
        default=30.0,
        gt=0,
        description="an append's hold on its conversation, renewed while it runs",
    )
    conversation_turn_wait_seconds: float = Field(
        default=120.0, ge=0, description="how long an append waits for another one (then 409)"
    )
    strict_connections: bool = Field(
        default=False,
        description="fail a model call made while its task holds a database connection (tests)",
    )
    metrics_access: Literal["public", "admin", "off"] = Field(
        default="public",
        description="/metrics: open to anyone (public), to an admin key (x-api-key), or off",
    )
    console_session_hours: float = Field(
        default=8.0,
        gt=0,
        le=24 * 30,
        description="how long a sign-in to the web console (/console) lasts",
    )
    log_level: str = Field(
        default="INFO", description="logging level (DEBUG, INFO, WARNING, ERROR)"
    )
    log_json: bool = Field(default=True, description="log JSON lines (false: plain text)")
    otlp_endpoint: str | None = Field(
        default=None,
        description="OpenTelemetry traces sent over OTLP/HTTP to this collector (base URL, or"
        " the full .../v1/traces); unset: off, unless OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT is set"
        " (needs the `otel` extra)",
    )
    max_request_bytes: int = Field(
        default=1024 * 1024 * 1024,
        ge=1024,
        description="largest upload body (POST /v1/files, /v1/audio/transcriptions); 413 beyond",
    )
    max_json_request_bytes: int = Field(
        default=16 * 1024 * 1024,
        ge=1024,
        description="largest body of every other route (JSON, parsed in memory); 413 beyond. "
        "/v1/ocr takes a document inline up to fetch_max_bytes (base64) whatever this is",
    )

    @field_validator("log_level")
    @classmethod
    def _upper(cls, value: str) -> str:
        return value.upper()

    @property
    def fetch_policy(self) -> FetchPolicy:
        return FetchPolicy(
            allow_private=self.fetch_allow_private,
            max_bytes=self.fetch_max_bytes,
            timeout_seconds=self.fetch_timeout_seconds,
        )

    @property
    def body_limits(self) -> BodyLimits:
        """The request body limits of the routes (see `core.middleware`)."""
        # A document sent inline to OCR is base64 (4/3 of its bytes) in a small JSON object.
        inline_document = self.fetch_max_bytes * 4 // 3 + 64 * 1024
        return BodyLimits(
            json=self.max_json_request_bytes,
            upload=self.max_request_bytes,
            routes={
                "/v1/ocr": max(self.max_json_request_bytes, inline_document),
                # OTLP exports: their own limit (the receiver checks the gunzipped size too).
                **dict.fromkeys(OTLP_PATHS, self.telemetry_max_body_bytes),
            },
            # A webhook delivery: streamed to its route, which counts it against its own limit.
            upload_patterns=(*UPLOAD_PATTERNS, RECEIVE_PATTERN),
        )

    @property
    def resolved_database_url(self) -> str:
        if self.database_url:
            return self.database_url
        return f"sqlite+aiosqlite:///{(self.data_dir / 'maestrale.db').resolve()}"

    @property
    def resolved_blob_dir(self) -> Path:
        return self.blob_dir or self.data_dir / "blobs"


def load_settings(config_file: str | Path | None = None, **overrides: Any) -> Settings:
    """Build settings from (highest first) `overrides`, the environment, the TOML file, defaults."""
    path = config_file or os.environ.get("MAESTRALE_CONFIG")
    toml_path = Path(path) if path else None
    if toml_path is not None and not toml_path.is_file():
        raise FileNotFoundError(f"config file not found: {toml_path}")

    class _FileSettings(Settings):
        @classmethod
        def settings_customise_sources(
            cls,
            settings_cls: type[BaseSettings],
            init_settings: PydanticBaseSettingsSource,
            env_settings: PydanticBaseSettingsSource,
            dotenv_settings: PydanticBaseSettingsSource,
            file_secret_settings: PydanticBaseSettingsSource,
        ) -> tuple[PydanticBaseSettingsSource, ...]:
            sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
            if toml_path is not None:
                sources.append(TomlConfigSettingsSource(settings_cls, toml_file=toml_path))
            return tuple(sources)

    values = {k: v for k, v in overrides.items() if v is not None}
    return _FileSettings(**values)


def make_data_dir(path: Path) -> None:
    """Create the data dir private to its owner, or make an existing one private (mode 0700):
    it holds the database, the blobs and the bootstrap keys."""
    private_dir(path)


def previous_secrets(settings: Settings) -> list[bytes]:
    """The earlier secret keys (`previous_secret_keys`), which still open what they sealed."""
    return [str(secret_value(key)).encode() for key in settings.previous_secret_keys]


def secret_value(value: object) -> str | None:
    """The text of a `SecretStr` setting, or None when unset."""
    getter = getattr(value, "get_secret_value", None)
    return getter() if getter else None
