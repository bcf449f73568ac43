"""The harness that runs the official `mistralai-workflows` worker (tests/support/official_worker).

Only the harness is checked here: an interpreter is found (or the tests skip), the cached venv
imports the SDK, and the app's DESCRIBE mode shows the three workflows with their handlers. The
first run builds the venv (about a minute with a warm pip cache); later runs reuse it.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.support import official_worker

# Generous for the first run, which installs the SDK; seconds afterwards.
pytestmark = [pytest.mark.ci_tier, pytest.mark.timeout(1500)]


@pytest.fixture(scope="module")
def venv() -> Path:
    return official_worker.require_worker_venv()


@pytest.fixture(scope="module")
def described(venv: Path) -> dict[str, Any]:
    return official_worker.describe_workflows(venv, deployment="harness-dep", worker_name="h1")


def test_finds_a_python_in_range_or_skips() -> None:
    python = official_worker.find_python312()
    if python is None:
        pytest.skip("no Python >=3.12,<3.15 on this machine")
    out = subprocess.run(
        [python, "-c", "import sys, venv; print(sys.version_info[0], sys.version_info[1])"],
        capture_output=True,
        text=True,
        check=True,
    )
    major, minor = map(int, out.stdout.split())
    assert (3, 12) <= (major, minor) < (3, 15)


def test_venv_imports_the_sdk_and_plugin(venv: Path) -> None:
    info = official_worker.venv_info(venv)
    assert info["requirements"] == list(official_worker.WORKER_REQUIREMENTS)
    out = subprocess.run(
        [
            str(official_worker.venv_python(venv)),
            "-c",
            "import mistralai.workflows as w, mistralai.workflows.plugins.mistralai as p; "
            "print(w.__version__, p.mistralai_chat_complete.__name__)",
        ],
        capture_output=True,
        text=True,
        cwd=venv,
        env=official_worker.worker_env(
            venv,
            server_url="http://127.0.0.1:9",
            api_key="unused",
            deployment="harness-dep",
            worker_name="h1",
            extra_env={"LOG_LEVEL": "WARNING"},
        ),
        check=False,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split()[-2:] == ["3.16.0", "mistralai_chat_complete"]


def test_venv_is_reused(venv: Path) -> None:
    assert official_worker.worker_venv() == venv
    assert venv.parent == official_worker.cache_root()


def test_describe_lists_the_three_workflows(described: dict[str, Any]) -> None:
    body = described["register_body"]
    assert body["deployment_name"] == "harness-dep"
    assert body["worker_name"] == "h1"
    by_name = {d["name"]: d for d in body["definitions"]}
    assert set(official_worker.WORKFLOW_NAMES) <= set(by_name)
    # The SDK adds its technical fan-out workflow to every registration.
    assert by_name["__parallel_execution__"]["is_technical"] is True
    for definition in by_name.values():
        assert definition["task_queue"] == "harness-dep"
    assert "chat_echo_call" in described["activities"]


def test_describe_shows_schemas_and_handlers(described: dict[str, Any]) -> None:
    by_name = {d["name"]: d for d in described["register_body"]["definitions"]}

    chat = by_name["chat-echo"]
    assert chat["input_schema"]["required"] == ["text"]
    assert set(chat["input_schema"]["properties"]) == {"text", "sleep_ms"}
    assert chat["output_schema"]["properties"] == {"result": {"title": "Result", "type": "string"}}
    assert chat["execution_timeout"] == "PT10M"  # ISO-8601 on the wire, not seconds

    interactive = by_name["interactive"]
    assert [s["name"] for s in interactive["signals"]] == ["add", "finish"]
    assert [q["name"] for q in interactive["queries"]] == ["total"]
    assert [u["name"] for u in interactive["updates"]] == ["set_total"]
    add = interactive["signals"][0]["input_schema"]
    assert add["properties"] == {"amount": {"title": "Amount", "type": "integer"}}
    assert interactive["updates"][0]["input_schema"]["required"] == ["value"]
    assert set(interactive["output_schema"]["properties"]) == {"total"}

    noop = by_name["noop"]
    assert noop["input_schema"]["additionalProperties"] is True
    assert not (noop["signals"] or noop["queries"] or noop["updates"])
