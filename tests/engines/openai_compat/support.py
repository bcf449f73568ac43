"""Helpers of the openai_compat tests: the stub subprocess and small request builders."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from maestrale.engines.types import ChatChunk, ChatRequest, FimRequest

STUB_SCRIPT = Path(__file__).with_name("stub_upstream.py")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass(frozen=True)
class Stub:
    """A running stub upstream: `url` is the base URL a catalog entry would name."""

    root: str
    process: subprocess.Popen[bytes]

    @property
    def url(self) -> str:
        return f"{self.root}/v1"

    async def records(self, tag: str) -> list[dict[str, Any]]:
        async with httpx.AsyncClient() as client:
            response = await client.get(f"{self.root}/stub/requests/{tag}")
            response.raise_for_status()
            records: list[dict[str, Any]] = response.json()
            return records

    async def record(self, tag: str) -> dict[str, Any]:
        records = await self.records(tag)
        assert len(records) == 1, records
        return records[0]


def start_stub(log_path: Path) -> Stub:
    port = free_port()
    log = open(log_path, "wb")  # noqa: SIM115 - the process owns it until it exits
    process = subprocess.Popen(
        [sys.executable, str(STUB_SCRIPT), "--port", str(port)],
        stdout=log,
        stderr=subprocess.STDOUT,
        env={**os.environ, "PYTHONPATH": ""},
    )
    log.close()
    root = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"stub exited with {process.returncode}: {log_path.read_text()}")
        try:
            if httpx.get(f"{root}/health", timeout=1).status_code == 200:
                return Stub(root=root, process=process)
        except httpx.HTTPError:
            pass
        time.sleep(0.05)
    process.kill()
    raise RuntimeError("the stub upstream did not start in 30 s")


def stop_stub(stub: Stub) -> None:
    stub.process.terminate()
    try:
        stub.process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        stub.process.kill()
        stub.process.wait()


def new_tag() -> str:
    """A tag no other test uses, so that records and attempt counts are this test's own."""
    return uuid.uuid4().hex[:12]


def chat_request(text: str, **kwargs: Any) -> ChatRequest:
    return ChatRequest(
        model="upstream-model", messages=[{"role": "user", "content": text}], **kwargs
    )


def fim_request(prompt: str, **kwargs: Any) -> FimRequest:
    return FimRequest(model="upstream-model", prompt=prompt, **kwargs)


async def collect(stream: AsyncIterator[ChatChunk]) -> list[ChatChunk]:
    return [chunk async for chunk in stream]


async def drain(stream: AsyncIterator[ChatChunk], into: list[ChatChunk]) -> None:
    """Read a stream to its end, keeping what arrived before a failure."""
    async for chunk in stream:
        into.append(chunk)


def content_of(chunks: list[ChatChunk]) -> str:
    return "".join(chunk.delta.get("content") or "" for chunk in chunks)


async def eventually(check: Callable[[], Awaitable[bool]], what: str, timeout: float = 5) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not await check():
        assert loop.time() < end, f"timed out waiting until {what}"
        await asyncio.sleep(0.05)
