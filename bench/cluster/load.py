"""A steady mixed load through the load balancer: chat completions, conversations (stored), file
uploads and reads, from a few client loops with a little think time. Every call is recorded
(start, end, status, which replica answered, Retry-After, error code) and every write carries a
marker (the chat's `x-correlation-id`, the conversation's name, the file's name) by which the
checks find what was stored, to count writes lost and duplicated."""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass

import httpx
import orjson

MODEL = "maestrale-echo"
# What each loop does, in turn (loops start at different places of the cycle).
CYCLE = ("chat", "conversation", "chat", "upload", "list", "chat", "models", "conversation")
WRITES = frozenset({"chat", "conversation", "upload"})


@dataclass(eq=False)
class Call:
    op: str
    marker: str
    start: float  # time.monotonic()
    end: float = 0.0  # 0: not answered yet
    status: int = 0  # 0: no HTTP answer (connection error, timeout)
    error: str = ""
    served_by: str = ""
    retry_after: str | None = None
    code: str = ""
    resource: str = ""  # id of what was written
    content: bytes = b""  # an uploaded file's content

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    @property
    def writes(self) -> bool:
        return self.op in WRITES

    @property
    def seconds(self) -> float:
        return (self.end or time.monotonic()) - self.start

    def describe(self, since: float) -> str:
        what = f"{self.status} {self.code}".strip() if self.status else self.error or "no answer"
        return f"{self.op} +{self.start - since:.2f}s {self.seconds:.2f}s: {what}"


class Load:
    """`concurrency` client loops against `url` until stopped; `calls` holds every call."""

    def __init__(
        self,
        url: str,
        key: str,
        run_id: str,
        concurrency: int = 6,
        think: float = 0.05,
        sleep_ms: int = 30,
        timeout: float = 60.0,
    ) -> None:
        self.run_id = run_id
        self.concurrency = concurrency
        self.think = think
        self.sleep_ms = sleep_ms
        self.calls: list[Call] = []
        self._count = 0
        self._stop = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        limits = httpx.Limits(
            max_connections=concurrency * 2, max_keepalive_connections=concurrency
        )
        self.client = httpx.AsyncClient(
            base_url=url,
            headers={"Authorization": f"Bearer {key}"},
            timeout=timeout,
            limits=limits,
        )

    async def start(self) -> None:
        self._stop.clear()
        self._tasks = [
            asyncio.create_task(self._loop(i), name=f"load-{i}") for i in range(self.concurrency)
        ]

    async def stop(self) -> None:
        """Let the calls under way finish (they are counted), then stop the loops."""
        self._stop.set()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []

    async def close(self) -> None:
        await self.stop()
        await self.client.aclose()

    def between(self, since: float, until: float) -> list[Call]:
        """The calls started in [since, until]."""
        return [c for c in self.calls if since <= c.start <= until]

    async def _loop(self, index: int) -> None:
        step = index
        while not self._stop.is_set():
            op = CYCLE[step % len(CYCLE)]
            step += 1
            self._count += 1
            call = Call(op, f"ld-{self.run_id}-{self._count}", time.monotonic())
            self.calls.append(call)
            await self._call(call)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), self.think)

    async def _call(self, call: Call) -> None:
        try:
            response = await self._send(call)
        except httpx.HTTPError as exc:
            call.error = f"{type(exc).__name__}: {exc}"[:200]
        else:
            call.status = response.status_code
            call.served_by = response.headers.get("x-served-by", "")
            call.retry_after = response.headers.get("retry-after")
            if call.ok:
                body = response.json() if call.op in ("conversation", "upload") else {}
                call.resource = str(body.get("conversation_id") or body.get("id") or "")
            else:
                call.code = _error_code(response)
        finally:
            call.end = time.monotonic()

    async def _send(self, call: Call) -> httpx.Response:
        text = f"/sleep {self.sleep_ms}\nload {call.marker}"
        if call.op == "chat":
            body = {"model": MODEL, "messages": [{"role": "user", "content": text}]}
            headers = {"x-correlation-id": call.marker}
            return await self.client.post("/v1/chat/completions", json=body, headers=headers)
        if call.op == "conversation":
            start = {"model": MODEL, "inputs": text, "name": call.marker, "store": True}
            return await self.client.post("/v1/conversations", json=start)
        if call.op == "upload":
            line = {"custom_id": call.marker, "body": {"messages": [{"role": "user"}]}}
            call.content = orjson.dumps(line) + b"\n"
            files = {"file": (f"{call.marker}.jsonl", call.content, "application/octet-stream")}
            return await self.client.post("/v1/files", data={"purpose": "batch"}, files=files)
        if call.op == "list":
            return await self.client.get("/v1/files", params={"page_size": 5})
        return await self.client.get("/v1/models")


def _error_code(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text[:80].strip()
    if isinstance(body, dict):
        detail = body.get("detail")
        if isinstance(detail, dict):
            body = detail
        for name in ("code", "error_code", "type"):
            if body.get(name):
                return str(body[name])
        return str(body.get("message") or body.get("status") or "")[:80]
    return ""
