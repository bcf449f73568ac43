"""`openai_compat` against real server processes: a second `maestrale serve`, llama.cpp's own
OpenAI server, and the stub upstream (for client disconnects), all driven through a front
Maestrale with the official SDKs."""

from __future__ import annotations

import asyncio
import importlib.util
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from mistralai.client import Mistral
from mistralai.client.errors import SDKError
from openai import OpenAI

from tests.engines.openai_compat.support import Stub, start_stub, stop_stub
from tests.support.app_fixtures import API_KEY
from tests.support.live import free_port, start_server, stop_server
from tests.support.local_model import FRANCE, on_topic

CATALOG = """
[[models]]
id = "remote-echo"
engine = "openai_compat"
base_url = "{upstream}/v1"
upstream_model = "maestrale-echo"
api_key_env = "MAESTRALE_TEST_UPSTREAM_KEY"
capabilities = ["completion_chat", "completion_fim", "function_calling"]
options = {{ fim_api = "mistral" }}

[[models]]
id = "remote-embed"
engine = "openai_compat"
base_url = "{upstream}/v1"
upstream_model = "maestrale-embed"
api_key_env = "MAESTRALE_TEST_UPSTREAM_KEY"
capabilities = ["embeddings"]

[[models]]
id = "slow-stub"
engine = "openai_compat"
base_url = "{stub}/v1"
upstream_model = "chunk-delay:100 words:200 tag:disconnect"
capabilities = ["completion_chat"]
"""

LLAMA_ENTRY = """
[[models]]
id = "llama-server"
engine = "openai_compat"
base_url = "{llama}/v1"
upstream_model = "smollm2"
capabilities = ["completion_chat"]
"""


@dataclass(frozen=True)
class Front:
    url: str
    data_dir: Path
    stub: Stub


def _llama_server(tmp: Path) -> tuple[subprocess.Popen[bytes], str] | None:
    if importlib.util.find_spec("llama_cpp") is None:
        return None
    from maestrale.engines.local.llama_model import default_model_path

    port = free_port()
    log = open(tmp / "llama-server.log", "wb")  # noqa: SIM115 - the process owns it
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            str(default_model_path()),
            "--model_alias",
            "smollm2",
            "--port",
            str(port),
            "--n_ctx",
            "2048",
            "--n_threads",
            "1",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError((tmp / "llama-server.log").read_text())
        try:
            if httpx.get(f"{url}/v1/models", timeout=1).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            time.sleep(0.2)
    proc.kill()
    raise RuntimeError("llama.cpp server did not start in 90 s")


@pytest.fixture(scope="module")
def front(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Front]:
    tmp = tmp_path_factory.mktemp("upstreams")
    (tmp / "upstream").mkdir()
    (tmp / "front").mkdir()
    stub = start_stub(tmp / "stub.log")
    upstream, upstream_url = start_server(tmp / "upstream", "--no-worker")
    llama = _llama_server(tmp)
    catalog = CATALOG.format(upstream=upstream_url, stub=stub.root)
    if llama is not None:
        catalog += LLAMA_ENTRY.format(llama=llama[1])
    (tmp / "models.toml").write_text(catalog)
    front_proc, front_url = start_server(
        tmp / "front",
        "--no-worker",
        "--models",
        str(tmp / "models.toml"),
        env={"MAESTRALE_TEST_UPSTREAM_KEY": API_KEY},
    )
    try:
        yield Front(front_url, tmp / "front", stub)
    finally:
        stop_server(front_proc)
        stop_server(upstream)
        if llama is not None:
            stop_server(llama[0])
        stop_stub(stub)


def test_through_a_second_maestrale(front: Front) -> None:
    sdk = Mistral(api_key=API_KEY, server_url=front.url)
    res = sdk.chat.complete(model="remote-echo", messages=[{"role": "user", "content": "relay"}])
    assert res.choices[0].message.content == "echo: relay"
    assert res.model == "remote-echo"
    text = "".join(
        e.data.choices[0].delta.content or ""
        for e in sdk.chat.stream(model="remote-echo", messages=[{"role": "user", "content": "a b"}])
    )
    assert text == "echo: a b"
    fim = sdk.fim.complete(model="remote-echo", prompt="def f():")
    assert fim.choices[0].message.content == "echo: def f():"
    emb = sdk.embeddings.create(model="remote-embed", inputs=["x", "y"])
    assert len(emb.data) == 2
    openai = OpenAI(api_key=API_KEY, base_url=f"{front.url}/v1")
    stream = openai.chat.completions.create(
        model="remote-echo", messages=[{"role": "user", "content": "oa"}], stream=True
    )
    assert "".join(c.choices[0].delta.content or "" for c in stream if c.choices) == "echo: oa"


def test_upstream_failures_map_to_statuses(front: Front) -> None:
    sdk = Mistral(api_key=API_KEY, server_url=front.url)
    with pytest.raises(SDKError) as err:
        sdk.chat.complete(model="remote-echo", messages=[{"role": "user", "content": "/fail 503"}])
    assert err.value.status_code == 502
    with pytest.raises(SDKError) as err:
        sdk.chat.complete(model="remote-echo", messages=[{"role": "user", "content": "/fail 404"}])
    assert err.value.status_code == 404
    assert "builtin engine failure" in err.value.body


def test_llama_cpp_server(front: Front) -> None:
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("the [local] extra is not installed")
    # On-topic answers, not an exact text: that differs between llama.cpp builds, and even
    # between two requests to llama.cpp's server (the second reuses the first's cached prompt).
    question = [{"role": "user", "content": FRANCE}]
    sdk = Mistral(api_key=API_KEY, server_url=front.url)
    res = sdk.chat.complete(model="llama-server", temperature=0, max_tokens=40, messages=question)
    assert on_topic(res.choices[0].message.content or ""), res.choices[0].message.content
    assert res.usage.prompt_tokens > 0
    assert res.usage.total_tokens == res.usage.prompt_tokens + res.usage.completion_tokens
    openai = OpenAI(api_key=API_KEY, base_url=f"{front.url}/v1")
    plain = openai.chat.completions.create(
        model="llama-server", messages=question, temperature=0, max_tokens=40
    )
    assert on_topic(plain.choices[0].message.content or ""), plain.choices[0].message.content
    stream = openai.chat.completions.create(
        model="llama-server", messages=question, temperature=0, max_tokens=40, stream=True
    )
    streamed = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    assert on_topic(streamed), streamed


async def test_client_disconnect_cancels_the_upstream(front: Front) -> None:
    body = {"model": "slow-stub", "messages": [{"role": "user", "content": "go"}], "stream": True}
    headers = {"Authorization": f"Bearer {API_KEY}"}
    async with (
        httpx.AsyncClient(base_url=front.url, headers=headers) as client,
        client.stream("POST", "/v1/chat/completions", json=body) as resp,
    ):
        assert resp.status_code == 200
        lines = 0
        async for line in resp.aiter_lines():
            lines += line.startswith("data:")
            if lines == 3:
                break
    # 200 words at 100 ms each would take 20 s: the upstream must see the cut far sooner.
    deadline = time.monotonic() + 5
    outcome = None
    while time.monotonic() < deadline:
        records = await front.stub.records("disconnect")
        outcome = records[-1].get("stream") if records else None
        if outcome == "cut":
            break
        await asyncio.sleep(0.1)
    assert outcome == "cut"
    await asyncio.sleep(0.6)  # the event is written within the flush interval
    with sqlite3.connect(front.data_dir / "maestrale.db") as conn:
        statuses = [
            r[0]
            for r in conn.execute(
                "SELECT status_code FROM chat_completion_events WHERE model = 'slow-stub'"
            )
        ]
    assert statuses == [499]
