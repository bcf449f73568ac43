"""SSE frames as the SDKs decode them."""

from __future__ import annotations

from collections.abc import AsyncIterator

import orjson
from fastapi import FastAPI
from httpx import ASGITransport, AsyncClient

from maestrale.core.sse import DONE, sse_event, sse_response


def test_frames() -> None:
    assert sse_event({"a": "é\n"}) == b'data: {"a":"\xc3\xa9\\n"}\n\n'
    assert sse_event({"type": "x"}, event="x") == b'event: x\ndata: {"type":"x"}\n\n'
    assert DONE == b"data: [DONE]\n\n"


async def test_streamed_response() -> None:
    app = FastAPI()

    async def frames() -> AsyncIterator[bytes]:
        for i in range(3):
            yield sse_event({"i": i})
        yield DONE

    @app.get("/s")
    async def stream() -> object:
        return sse_response(frames())

    async with AsyncClient(transport=ASGITransport(app=app), base_url="http://t") as c:
        resp = await c.get("/s")
    assert resp.headers["content-type"].startswith("text/event-stream")
    assert resp.headers["cache-control"] == "no-cache"
    lines = [line for line in resp.text.split("\n\n") if line]
    assert [orjson.loads(line[6:]) for line in lines[:3]] == [{"i": 0}, {"i": 1}, {"i": 2}]
    assert lines[3] == "data: [DONE]"
