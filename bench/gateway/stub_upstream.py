"""A minimal OpenAI-compatible upstream that answers instantly, for the gateway benchmark.

A raw ASGI app (no framework) so that the baseline costs as little as possible:
`POST /v1/chat/completions` returns a fixed small completion with usage (or, with
`"stream": true`, three SSE chunks and `[DONE]`); `GET /v1/models` lists the one model.
The body is read in full (as a real upstream would) but only looked at for `"stream"`.
It is also the OTLP/HTTP collector of the traced targets: `POST /v1/traces` counts the spans
it is sent and drops them; `GET /stub/traces` says how many came.

    .venv/bin/python -m bench.gateway.stub_upstream --port 8765
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import orjson

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

MODEL = "stub"
CREATED = 1764115200
COMPLETION = orjson.dumps(
    {
        "id": "chatcmpl-stub",
        "object": "chat.completion",
        "created": CREATED,
        "model": MODEL,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "Hello from the stub."},
                "finish_reason": "stop",
                "logprobs": None,
            }
        ],
        "usage": {"prompt_tokens": 12, "completion_tokens": 5, "total_tokens": 17},
    }
)


def _chunk(delta: dict[str, Any], finish: str | None, usage: dict[str, int] | None) -> bytes:
    body = {
        "id": "chatcmpl-stub",
        "object": "chat.completion.chunk",
        "created": CREATED,
        "model": MODEL,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}],
    }
    if usage is not None:
        body["usage"] = usage
    return b"data: " + orjson.dumps(body) + b"\n\n"


STREAM = (
    _chunk({"role": "assistant", "content": ""}, None, None)
    + _chunk({"content": "Hello from the stub."}, None, None)
    + _chunk({}, "stop", {"prompt_tokens": 12, "completion_tokens": 5, "total_tokens": 17})
    + b"data: [DONE]\n\n"
)
MODELS = orjson.dumps(
    {"object": "list", "data": [{"id": MODEL, "object": "model", "created": CREATED}]}
)
NOT_FOUND = orjson.dumps({"error": {"message": "not found", "type": "invalid_request_error"}})

JSON_HEADERS = [(b"content-type", b"application/json")]
SSE_HEADERS = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")]
PROTOBUF_HEADERS = [(b"content-type", b"application/x-protobuf")]
# What the traced targets exported (one process: module state is the stub's own).
TRACES = {"exports": 0, "spans": 0}


def _span_count(body: bytes) -> int:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    request = ExportTraceServiceRequest()
    request.ParseFromString(body)
    return sum(
        len(scope.spans) for resource in request.resource_spans for scope in resource.scope_spans
    )


async def _reply(send: Send, status: int, headers: list[tuple[bytes, bytes]], body: bytes) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [*headers, (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})


async def app(scope: Scope, receive: Receive, send: Send) -> None:
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    if scope["type"] != "http":
        return
    body = b""
    more = True
    while more:
        message = await receive()
        body += message.get("body", b"")
        more = message.get("more_body", False)
    path: str = scope["path"]
    if scope["method"] == "POST" and path.endswith("/chat/completions"):
        stream = b'"stream"' in body and orjson.loads(body).get("stream") is True
        if stream:
            await _reply(send, 200, SSE_HEADERS, STREAM)
        else:
            await _reply(send, 200, JSON_HEADERS, COMPLETION)
    elif scope["method"] == "POST" and path == "/v1/traces":
        TRACES["exports"] += 1
        TRACES["spans"] += _span_count(body)
        await _reply(send, 200, PROTOBUF_HEADERS, b"")  # an empty ExportTraceServiceResponse
    elif scope["method"] == "GET" and path == "/stub/traces":
        await _reply(send, 200, JSON_HEADERS, orjson.dumps(TRACES))
    elif scope["method"] == "GET" and path.endswith("/models"):
        await _reply(send, 200, JSON_HEADERS, MODELS)
    elif path == "/health":
        await _reply(send, 200, JSON_HEADERS, b'{"status":"ok","time":%d}' % int(time.time()))
    else:
        await _reply(send, 404, JSON_HEADERS, NOT_FOUND)


def main() -> None:
    import uvicorn

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    uvicorn.run(
        app,
        host=args.host,
        port=args.port,
        loop="uvloop",
        http="httptools",
        log_level="warning",
        access_log=False,
        lifespan="on",
    )


if __name__ == "__main__":
    main()
