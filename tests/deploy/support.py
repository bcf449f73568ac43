"""What the static checks of the deployment files share: where they are, the tools that check
them (each test skips, saying why, when its tool is not installed), and the project's own
settings and command line to hold those files to."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from maestrale.cli import _parser
from maestrale.config import Settings

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
DOCKERFILE = REPO / "Dockerfile"
COMPOSE = DEPLOY / "compose.yaml"
HAPROXY_CFG = DEPLOY / "haproxy" / "haproxy.cfg"
KUBERNETES = DEPLOY / "kubernetes"

# Variables read by libraries rather than by Maestrale's settings.
EXTERNAL_ENV = {
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_SERVICE_NAME",
}


def find_tool(name: str) -> str | None:
    """A command-line tool: beside this interpreter (the venv's, which may not be on PATH),
    else on PATH."""
    beside = Path(sys.executable).parent / name
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which(name)


def require_tool(name: str, installed_by: str) -> str:
    path = find_tool(name)
    if path is None:
        pytest.skip(f"`{name}` is not installed ({installed_by})")
    return path


def run(args: list[str], *, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout, check=False)


def load_yaml_documents(path: Path) -> list[Any]:
    with path.open(encoding="utf-8") as fh:
        return [doc for doc in yaml.safe_load_all(fh) if doc is not None]


def settings_env_names() -> set[str]:
    """The environment variables Maestrale's settings read."""
    return {f"MAESTRALE_{name.upper()}" for name in Settings.model_fields} | {"MAESTRALE_CONFIG"}


def unknown_env_names(names: set[str]) -> set[str]:
    """The names among `names` that neither Maestrale nor the libraries it configures read:
    a misspelt setting would be ignored silently (the settings allow extra variables)."""
    return names - settings_env_names() - EXTERNAL_ENV


def cli_error(argv: list[str]) -> str | None:
    """Why `maestrale ARGV` would not start (argparse's message), or None when it parses."""
    try:
        _parser().parse_args(argv)
    except SystemExit as exc:
        return f"`maestrale {' '.join(argv)}` does not parse (exit {exc.code})"
    return None


def seconds(value: str | int | float) -> float:
    """A duration as compose writes them (`30s`, `1m30s`, `500ms`) or a plain number."""
    if isinstance(value, int | float):
        return float(value)
    total, units = 0.0, {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001, "us": 1e-6}
    parts = re.findall(r"(\d+(?:\.\d+)?)(ms|us|h|m|s)", value)
    assert parts and "".join(n + u for n, u in parts) == value, f"not a duration: {value!r}"
    for number, unit in parts:
        total += float(number) * units[unit]
    return total
