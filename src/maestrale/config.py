"""Settings: `MAESTRALE_*` environment variables over an optional TOML file over defaults.

Command-line flags win over both. The TOML file is `--config FILE` or `MAESTRALE_CONFIG`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)


class Settings(BaseSettings):
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
    redis_url: str | None = None

    bootstrap_api_key: SecretStr | None = None
    bootstrap_admin_key: SecretStr | None = None

    auto_migrate: bool = Field(default=True, description="apply migrations when serving starts")
    worker: bool = Field(default=True, description="run the in-process job worker in `serve`")
    worker_concurrency: int = Field(default=4, ge=1, le=256)
    job_lease_seconds: float = Field(default=30.0, gt=0)
    job_poll_seconds: float = Field(default=0.5, gt=0)

    accounting_flush_seconds: float = Field(
        default=0.25, gt=0, le=1.0, description="usage and events are durable within this"
    )
    auth_cache_ttl: float = Field(
        default=1.0, ge=0, description="seconds a verified key is trusted before re-reading it"
    )
    gc_freeze: bool = Field(default=True, description="gc.freeze() after start-up")
    log_level: str = "INFO"
    log_json: bool = True
    max_request_bytes: int = Field(default=1024 * 1024 * 1024, ge=1024)

    @field_validator("log_level")
    @classmethod
    def _upper(cls, value: str) -> str:
        return value.upper()

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
    """Create the data dir private to its owner: it holds the database and the bootstrap keys."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
