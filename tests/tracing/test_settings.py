"""When tracing is on, and what it costs when it is off: nothing is installed or imported."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from maestrale.config import Settings
from maestrale.tracing.setup import traces_endpoint

STANDARD = (
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_SDK_DISABLED",
)


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in STANDARD:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_the_endpoint_comes_from_the_setting_or_the_standard_variables(
    clean_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    def endpoint(value: str | None = None) -> tuple[bool, str | None]:
        return traces_endpoint(Settings(data_dir=tmp_path, otlp_endpoint=value))

    assert endpoint() == (False, None)
    assert endpoint("") == (False, None)
    # A base URL gets the traces path; a full one is kept.
    assert endpoint("http://collector:4318") == (True, "http://collector:4318/v1/traces")
    assert endpoint("http://collector:4318/") == (True, "http://collector:4318/v1/traces")
    assert endpoint("http://c:4318/v1/traces") == (True, "http://c:4318/v1/traces")
    # The standard variables turn it on; the exporter reads them itself.
    clean_env.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318")
    assert endpoint() == (True, None)
    clean_env.delenv("OTEL_EXPORTER_OTLP_ENDPOINT")
    clean_env.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://collector:4318/v1/traces")
    assert endpoint() == (True, None)
    assert endpoint("http://mine:4318") == (True, "http://mine:4318/v1/traces")  # ours first
    # The SDK's own switch wins over everything.
    clean_env.setenv("OTEL_SDK_DISABLED", "true")
    assert endpoint("http://mine:4318") == (False, None)


OFF_CHECK = """
import sys
from maestrale.app import create_app
from maestrale.config import Settings
from maestrale import tracing

app = create_app(Settings(data_dir=sys.argv[1]))
names = [m.cls.__name__ for m in app.user_middleware]
assert "TracingMiddleware" not in names, names
loaded = sorted(m for m in sys.modules if m.startswith("maestrale.tracing."))
assert loaded == ["maestrale.tracing.setup", "maestrale.tracing.spans"], loaded
assert tracing.span("auth") is tracing.NO_SPAN
assert tracing.engine_span("chat", "m", "builtin") is tracing.NO_SPAN
assert tracing.job_span("k", "id", 1) is tracing.NO_SPAN
headers = {"a": "b"}
assert tracing.outbound_headers(headers) is headers
assert tracing.outbound_headers(None) is None
tracing.inject(headers)
assert headers == {"a": "b"}
"""


def run_check(code: str, tmp_path: Path) -> None:
    """`code` in a fresh interpreter, without the machine's OTEL_* variables."""
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    result = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "data")],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr


def test_off_installs_and_imports_nothing(tmp_path: Path) -> None:
    run_check(OFF_CHECK, tmp_path)


ON_CHECK = """
import sys
from maestrale.app import create_app
from maestrale.config import Settings

app = create_app(Settings(data_dir=sys.argv[1], otlp_endpoint="http://127.0.0.1:9"))
names = [m.cls.__name__ for m in app.user_middleware]
assert names[0] == "TracingMiddleware", names  # outermost
assert names.count("TracingMiddleware") == 1, names
"""


def test_on_the_request_span_is_outermost(tmp_path: Path) -> None:
    run_check(ON_CHECK, tmp_path)
