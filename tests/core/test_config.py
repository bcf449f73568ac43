"""Settings precedence: flags over environment over the TOML file over defaults."""

from __future__ import annotations

from pathlib import Path

import pytest

from maestrale.config import load_settings


def test_precedence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "maestrale.toml"
    config.write_text('port = 9000\nhost = "0.0.0.0"\nworker_concurrency = 7\n')
    monkeypatch.setenv("MAESTRALE_PORT", "9100")
    settings = load_settings(config)
    assert settings.host == "0.0.0.0"
    assert settings.port == 9100
    assert settings.worker_concurrency == 7
    assert load_settings(config, port=9200).port == 9200


def test_defaults(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MAESTRALE_CONFIG", raising=False)
    settings = load_settings(data_dir=tmp_path)
    assert (
        settings.resolved_database_url
        == f"sqlite+aiosqlite:///{(tmp_path / 'maestrale.db').resolve()}"
    )
    assert settings.resolved_blob_dir == tmp_path / "blobs"
    assert settings.worker is True


def test_missing_config_file(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        load_settings(tmp_path / "absent.toml")
