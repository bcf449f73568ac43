"""The official TypeScript SDK (`@mistralai/mistralai`, the version `ts/package.json` pins)
drives a live server: chat (plain and streamed) and FIM, embeddings, files, batch jobs, agents
and conversations. The SDK parses every response with its own schemas, so a shape it cannot read
fails the scenario.

Needs Node.js 20+ and npm. The SDK is installed once with `npm install` into a cache directory
(`MAESTRALE_TS_SDK_CACHE`, by default `~/.cache/maestrale/ts-sdk-<hash of package.json>`);
without Node.js or npm, or when npm cannot install (no registry access), the tests are skipped
with the reason, unless `MAESTRALE_TS_SDK_REQUIRED=1`, which makes that a failure (for CI).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

import pytest

from tests.conformance.conftest import LiveServer

HERE = Path(__file__).parent / "ts"
INSTALL_TIMEOUT = 600
SCENARIO_TIMEOUT = 90


def _unavailable(reason: str) -> NoReturn:
    if os.environ.get("MAESTRALE_TS_SDK_REQUIRED") == "1":
        pytest.fail(f"the TypeScript SDK conformance tests cannot run: {reason}")
    pytest.skip(f"TypeScript SDK conformance skipped: {reason}")


def _node_major(node: str) -> int:
    version = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30)
    return int(version.stdout.strip().lstrip("v").split(".")[0] or 0)


def _cache_dir(manifest: bytes) -> Path:
    configured = os.environ.get("MAESTRALE_TS_SDK_CACHE")
    if configured:
        return Path(configured)
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "maestrale" / f"ts-sdk-{hashlib.sha256(manifest).hexdigest()[:12]}"


@contextlib.contextmanager
def _locked(directory: Path) -> Iterator[None]:
    """One installer at a time (parallel test sessions share the cache)."""
    with open(directory / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


@pytest.fixture(scope="session")
def ts_sdk() -> Path:
    """A directory holding `scenarios.mjs` beside a `node_modules` with the pinned SDK."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        _unavailable("Node.js and npm are not installed")
    if _node_major(node) < 20:
        _unavailable("Node.js 20 or later is needed")
    manifest = (HERE / "package.json").read_bytes()
    pinned = json.loads(manifest)["dependencies"]["@mistralai/mistralai"]
    directory = _cache_dir(manifest)
    directory.mkdir(parents=True, exist_ok=True)
    installed = directory / "node_modules" / "@mistralai" / "mistralai" / "package.json"
    with _locked(directory):
        if not installed.exists() or json.loads(installed.read_text())["version"] != pinned:
            (directory / "package.json").write_bytes(manifest)
            try:
                done = subprocess.run(
                    [npm, "install", "--no-audit", "--no-fund", "--no-package-lock"],
                    cwd=directory,
                    capture_output=True,
                    text=True,
                    timeout=INSTALL_TIMEOUT,
                )
            except subprocess.TimeoutExpired:
                _unavailable(f"npm install took more than {INSTALL_TIMEOUT} s")
            if done.returncode != 0 or not installed.exists():
                said = " / ".join((done.stderr or done.stdout).strip().splitlines()[:3])
                _unavailable(f"npm could not install @mistralai/mistralai@{pinned} ({said})")
        shutil.copyfile(HERE / "scenarios.mjs", directory / "scenarios.mjs")
    return directory


def run(ts_sdk: Path, server: LiveServer, scenario: str) -> dict[str, Any]:
    env = {**os.environ, "MAESTRALE_URL": server.url, "MAESTRALE_API_KEY": server.api_key}
    done = subprocess.run(
        ["node", "scenarios.mjs", scenario],
        cwd=ts_sdk,
        env=env,
        capture_output=True,
        text=True,
        timeout=SCENARIO_TIMEOUT,
    )
    assert done.returncode == 0, f"scenario {scenario} failed:\n{done.stderr}\n{done.stdout}"
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_chat(ts_sdk: Path, live_server: LiveServer) -> None:
    seen = run(ts_sdk, live_server, "chat")
    assert seen["object"] == "chat.completion" and seen["model"] == "maestrale-echo"
    assert seen["content"] == "echo: hello" and seen["finishReason"] == "stop"
    usage = seen["usage"]
    assert usage["totalTokens"] == usage["promptTokens"] + usage["completionTokens"] > 0
    assert seen["toolFinish"] == "tool_calls" and seen["toolName"] == "get_weather"
    assert seen["toolArguments"] == {"city": "Paris"}
    assert seen["toolAnswer"] == "tool get_weather returned: sunny"
    assert seen["json"] == {"echo": "shape"}
    assert seen["truncatedFinish"] == "length"
    assert seen["fim"] == "echo: def f("
    assert seen["unknownModel"] == 404


def test_chat_stream(ts_sdk: Path, live_server: LiveServer) -> None:
    seen = run(ts_sdk, live_server, "chat_stream")
    assert seen["content"] == "echo: one two three"
    assert seen["chunks"] >= 4 and seen["finishReason"] == "stop"
    assert seen["usage"]["totalTokens"] > 0
    assert seen["fim"] == "echo: abc"


def test_embeddings(ts_sdk: Path, live_server: LiveServer) -> None:
    seen = run(ts_sdk, live_server, "embeddings")
    assert seen["object"] == "list" and seen["model"] == "maestrale-embed"
    assert seen["count"] == 3 and seen["indexes"] == [0, 1, 2] and seen["single"] == 1
    assert seen["dimensions"] == 1024
    assert seen["similar"] > seen["different"]
    assert seen["usage"]["promptTokens"] > 0
    assert seen["wrongModel"] == 400


def test_files(ts_sdk: Path, live_server: LiveServer) -> None:
    seen = run(ts_sdk, live_server, "files")
    content = '{"custom_id": "a", "body": {"messages": []}}\n'
    assert seen["filename"] == "ts-requests.jsonl" and seen["purpose"] == "batch"
    assert seen["bytes"] == len(content) and seen["numLines"] == 1
    assert seen["listed"] and seen["total"] >= 1 and seen["retrieved"]
    assert seen["downloaded"] == content and seen["fetched"] == content
    assert seen["blobPurpose"] == "ocr"
    assert seen["deleted"] is True and seen["afterDelete"] == 404


def test_batch(ts_sdk: Path, live_server: LiveServer) -> None:
    seen = run(ts_sdk, live_server, "batch")
    assert seen["created"] == {"object": "batch", "status": "QUEUED", "total": 3}
    assert seen["status"] == "SUCCESS" and seen["counts"] == [2, 1]
    assert sorted(seen["outputs"]) == [["0", 200], ["1", 200]]
    assert seen["errorFile"]
    assert seen["fileStatus"] == "SUCCESS" and seen["fileOutputs"] == ["e1", "e2"]
    assert seen["inlineId"] in seen["listed"] and seen["listedTotal"] >= 1
    assert seen["cancelledStatus"] == "SUCCESS"  # a finished job stays as it is
    assert seen["deleted"] is True
    assert seen["unsupported"] == 400


def test_agents(ts_sdk: Path, live_server: LiveServer) -> None:
    seen = run(ts_sdk, live_server, "agents")
    assert seen["object"] == "agent" and seen["name"] == "ts-helper" and seen["version"] == 1
    assert seen["tool"] == "function" and seen["temperature"] == 0.2
    assert seen["gotModel"] == "maestrale-echo"
    assert seen["updatedVersion"] == 2 and seen["updatedInstructions"] == "Be very brief."
    assert seen["versions"] == [1, 2] and seen["firstInstructions"] == "Be brief."
    assert seen["alias"] == ["stable", 1] and seen["switched"] == 1
    assert seen["listed"]
    assert seen["completion"] == "echo: hi agent"
    assert seen["afterDelete"] == 404


def test_conversations(ts_sdk: Path, live_server: LiveServer) -> None:
    seen = run(ts_sdk, live_server, "conversations")
    assert seen["object"] == "conversation.response"
    assert seen["outputType"] == "message.output" and seen["output"] == "echo: hello"
    assert seen["usage"]["totalTokens"] > 0
    assert seen["appended"] == "echo: again"
    assert seen["gotModel"] == "maestrale-echo" and seen["gotName"] == "ts-chat"
    assert seen["history"] == [
        ["message.input", "hello"],
        ["message.output", "echo: hello"],
        ["message.input", "again"],
        ["message.output", "echo: again"],
    ]
    assert seen["messages"] == 4 and seen["listed"]
    assert seen["restarted"] == "echo: instead" and seen["restartedNew"]
    assert seen["events"][0] == "conversation.response.started"
    assert seen["events"][-1] == "conversation.response.done"
    assert "message.output.delta" in seen["events"]
    assert seen["streamedText"] == "echo: streamed"
    assert seen["appendEvents"][-1] == "conversation.response.done"
    assert seen["agentOutput"] == "echo: hey" and seen["agentId"]
    assert seen["afterDelete"] == 404
