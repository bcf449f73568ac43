"""A tiny OpenAI-compatible upstream, steered by the request, for tests and benchmarks.

By default it answers at once with a fixed small completion, plain or streamed, in OpenAI shapes
with usage; streams end with `data: [DONE]`. Routes (with or without the `/v1` prefix):
`POST /chat/completions`, `/completions` (classic text completions, FIM with `suffix`),
`/fim/completions` (Mistral shape), `/embeddings`, and vLLM's `/tokenize` (at the root only, as
vLLM serves it: a chat's messages, counted as its usage's PROMPT_TOKENS); `GET /models`,
`/health`, `/stub/stats`, `/stub/requests/{tag}`.

Behaviour is steered by words in the *steering text*: the model name followed by the last user
message (chat), the prompt (completions) or the inputs (embeddings). Words:

    tag:NAME            record the request under NAME (GET /stub/requests/NAME): attempt number,
                        path, body, headers, client address, and for streams their outcome
                        ("open", "completed", "cut" when the client went away, "died")
    status:CODE         answer CODE with an error body
    fail:N:CODE         answer CODE to the first N attempts of this tag (or text), then normally
    retry-after:S       add `Retry-After: S` to error answers
    error-body:STYLE    openai (default) | message | detail | detail-list | text
    sleep:MS            wait before answering (before the response headers)
    slow-first-byte:MS  send the headers at once, the first body byte after MS (default 1000)
    chunk-delay:MS      wait between stream events
    words:N             answer N words ("w1 w2 ...") instead of the fixed sentence
    stream-then-die     stream two events, then drop the connection mid-body
    no-usage            never send usage in a stream
    usage-in-last       send a stream's usage in the finish chunk, not in a chunk of its own
    tool-call           call the first offered tool (finish reason tool_calls)
    echo                the answer's content is the request body as JSON (sorted keys)
    invalid-json        answer (or stream) bytes that are not JSON
    reverse             list embeddings in reverse index order
    no-count            answer /tokenize as llama.cpp's server does (tokens, no count)

Standalone: `python tests/engines/openai_compat/stub_upstream.py --port 8001`
(or `uvicorn --factory tests.engines.openai_compat.stub_upstream:create_app --port 8001`);
the base URL of a catalog entry is then `http://127.0.0.1:8001/v1`.
"""

from __future__ import annotations

import argparse
import asyncio
import zlib
from collections import defaultdict
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]

TEXT = "Hello! This is the stub upstream."
PROMPT_TOKENS = 10
EMBEDDING_DIMENSION = 8
JSON = ((b"content-type", b"application/json"),)
SSE = ((b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache"))
RECORDED_HEADERS = (
    "authorization",
    "user-agent",
    "content-type",
    "accept",
    "x-extra",
    "traceparent",
    "tracestate",
)


@dataclass
class Steer:
    """What the steering words of a request ask for."""

    tag: str | None = None
    status: int | None = None
    fail: tuple[int, int] | None = None
    retry_after: str | None = None
    error_body: str = "openai"
    sleep_ms: int = 0
    first_byte_ms: int = 0
    chunk_delay_ms: int = 0
    words: int | None = None
    die: bool = False
    no_usage: bool = False
    usage_in_last: bool = False
    tool_call: bool = False
    echo: bool = False
    invalid_json: bool = False
    reverse: bool = False
    no_count: bool = False

    @classmethod
    def parse(cls, text: str) -> Steer:
        steer = cls()
        for word in text.split():
            name, _, value = word.partition(":")
            if name == "tag":
                steer.tag = value
            elif name == "status":
                steer.status = int(value)
            elif name == "fail":
                count, _, status = value.partition(":")
                steer.fail = (int(count), int(status or 503))
            elif name == "retry-after":
                steer.retry_after = value
            elif name == "error-body":
                steer.error_body = value
            elif name == "sleep":
                steer.sleep_ms = int(value)
            elif name == "slow-first-byte":
                steer.first_byte_ms = int(value or 1000)
            elif name == "chunk-delay":
                steer.chunk_delay_ms = int(value)
            elif name == "words":
                steer.words = int(value)
            elif name in FLAGS:
                setattr(steer, FLAGS[name], True)
        return steer

    def text(self) -> str:
        if self.words is None:
            return TEXT
        return " ".join(f"w{i + 1}" for i in range(self.words))


FLAGS = {
    "stream-then-die": "die",
    "no-usage": "no_usage",
    "usage-in-last": "usage_in_last",
    "tool-call": "tool_call",
    "echo": "echo",
    "invalid-json": "invalid_json",
    "reverse": "reverse",
    "no-count": "no_count",
}


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def steering_text(kind: str, body: dict[str, Any]) -> str:
    model = str(body.get("model", ""))
    if kind in ("chat", "tokenize"):
        messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
        users = [m for m in messages if m.get("role") == "user"]
        return f"{model} {_text_of(users[-1].get('content')) if users else ''}"
    if kind == "embeddings":
        inputs = body.get("input")
        return f"{model} {' '.join(inputs) if isinstance(inputs, list) else inputs}"
    return f"{model} {body.get('prompt', '')}"


def error_body(status: int, style: str) -> bytes:
    message = f"stub says {status}"
    if style == "text":
        return message.encode()
    if style == "message":
        return orjson.dumps({"object": "error", "message": message, "type": "stub", "code": None})
    if style == "detail":
        return orjson.dumps({"detail": message})
    if style == "detail-list":
        return orjson.dumps(
            {"detail": [{"loc": ["body", "messages"], "msg": message, "type": "value_error"}]}
        )
    return orjson.dumps(
        {"error": {"message": message, "type": "stub_error", "param": None, "code": str(status)}}
    )


def usage(completion: int) -> dict[str, int]:
    return {
        "prompt_tokens": PROMPT_TOKENS,
        "completion_tokens": completion,
        "total_tokens": PROMPT_TOKENS + completion,
    }


@dataclass
class Answer:
    """What a completion says, before it is shaped as a chat or text completion."""

    content: str | None
    tool_calls: list[dict[str, Any]] | None = None
    pieces: list[str] = field(default_factory=list)

    @property
    def finish_reason(self) -> str:
        return "tool_calls" if self.tool_calls else "stop"

    @property
    def tokens(self) -> int:
        return max(len(self.pieces), 1)


def make_answer(steer: Steer, body: dict[str, Any]) -> Answer:
    tools = body.get("tools") or []
    if steer.tool_call and tools:
        name = tools[0].get("function", {}).get("name", "tool")
        function = {"name": name, "arguments": "{}"}
        call: dict[str, Any] = {"id": "call_stub_0", "type": "function", "function": function}
        return Answer(content=None, tool_calls=[call], pieces=["{}"])
    if steer.echo:
        text = orjson.dumps(body, option=orjson.OPT_SORT_KEYS).decode()
        return Answer(content=text, pieces=[text])
    text = steer.text()
    words = text.split(" ")
    pieces = [w if i == len(words) - 1 else w + " " for i, w in enumerate(words)]
    return Answer(content=text, pieces=pieces)


# The log-probability the stub gives every token, when the request asks for logprobs.
LOGPROB = -0.25


def logprobs_of(kind: str, body: dict[str, Any], pieces: list[str]) -> dict[str, Any] | None:
    """OpenAI's logprobs of `pieces` (one token each) when `body` asks for them: the chat shape
    (`content` entries without token ids) or the classic completion one."""
    if not body.get("logprobs"):
        return None
    if kind == "completions":
        offsets = [sum(len(p) for p in pieces[:i]) for i in range(len(pieces))]
        return {
            "tokens": pieces,
            "token_logprobs": [LOGPROB] * len(pieces),
            "top_logprobs": [{piece: LOGPROB} for piece in pieces],
            "text_offset": offsets,
        }
    top = int(body.get("top_logprobs") or 0)
    content = []
    for piece in pieces:
        entry = {"token": piece, "logprob": LOGPROB, "bytes": list(piece.encode())}
        content.append({**entry, "top_logprobs": [entry] * min(top, 1)})
    return {"content": content, "refusal": None}


def _chunk(obj: str, model: str, choices: list[dict[str, Any]], **extra: Any) -> bytes:
    data = {"id": "stub-1", "object": obj, "created": 0, "model": model, "choices": choices}
    return b"data: " + orjson.dumps({**data, **extra}) + b"\n\n"


def stream_frames(kind: str, body: dict[str, Any], steer: Steer, answer: Answer) -> list[bytes]:
    """The SSE frames of a streamed answer, `[DONE]` included."""
    model = str(body.get("model", ""))
    n = int(body.get("n") or 1)
    text = kind == "completions"
    obj = "text_completion" if text else "chat.completion.chunk"
    final_usage = usage(answer.tokens * n)
    # A Mistral-shaped upstream always ends with usage in its last chunk; OpenAI ones send it,
    # when asked, in a chunk of its own.
    in_last = steer.usage_in_last or kind == "fim"
    asked = bool((body.get("stream_options") or {}).get("include_usage"))
    frames: list[bytes] = []
    for index in range(n):
        if text:
            for piece in answer.pieces:
                choice = {"index": index, "text": piece, "finish_reason": None}
                choice["logprobs"] = logprobs_of(kind, body, [piece])
                frames.append(_chunk(obj, model, [choice]))
            last = {"index": index, "text": "", "finish_reason": answer.finish_reason}
        else:
            first = {"role": "assistant", "content": ""}
            frames.append(
                _chunk(obj, model, [{"index": index, "delta": first, "finish_reason": None}])
            )
            for delta in _deltas(answer):
                choice = {"index": index, "delta": delta, "finish_reason": None}
                content = delta.get("content")
                if isinstance(content, str) and content:
                    choice["logprobs"] = logprobs_of(kind, body, [content])
                frames.append(_chunk(obj, model, [choice]))
            last = {"index": index, "delta": {}, "finish_reason": answer.finish_reason}
        with_usage = in_last and index == n - 1 and not steer.no_usage
        extra = {"usage": final_usage} if with_usage else {}
        frames.append(_chunk(obj, model, [last], **extra))
    if asked and not in_last and not steer.no_usage:
        frames.append(_chunk(obj, model, [], usage=final_usage))
    if steer.invalid_json:
        frames.insert(1, b"data: {this is not json\n\n")
    frames.append(b"data: [DONE]\n\n")
    return frames


def _deltas(answer: Answer) -> list[dict[str, Any]]:
    if answer.tool_calls:
        deltas = []
        for i, call in enumerate(answer.tool_calls):
            head = {"name": call["function"]["name"], "arguments": ""}
            deltas.append({"tool_calls": [{"index": i, "id": call["id"], "function": head}]})
            tail = {"arguments": call["function"]["arguments"]}
            deltas.append({"tool_calls": [{"index": i, "function": tail}]})
        return deltas
    return [{"content": piece} for piece in answer.pieces]


def plain_answer(kind: str, body: dict[str, Any], answer: Answer) -> dict[str, Any]:
    n = int(body.get("n") or 1)
    choices: list[dict[str, Any]] = []
    for index in range(n):
        if kind == "completions":
            choices.append(
                {
                    "index": index,
                    "text": answer.content,
                    "finish_reason": answer.finish_reason,
                    "logprobs": logprobs_of(kind, body, answer.pieces),
                }
            )
        else:
            message: dict[str, Any] = {"role": "assistant", "content": answer.content}
            message["tool_calls"] = answer.tool_calls
            choice = {"index": index, "message": message, "finish_reason": answer.finish_reason}
            if answer.content is not None:
                choice["logprobs"] = logprobs_of(kind, body, answer.pieces)
            choices.append(choice)
    return {
        "id": "stub-1",
        "object": "text_completion" if kind == "completions" else "chat.completion",
        "created": 0,
        "model": body.get("model", ""),
        "choices": choices,
        "usage": usage(answer.tokens * n),
    }


def embeddings(body: dict[str, Any], steer: Steer) -> dict[str, Any]:
    inputs = body.get("input")
    texts = [inputs] if isinstance(inputs, str) else [str(t) for t in inputs or []]
    dimension = int(body.get("dimensions") or EMBEDDING_DIMENSION)
    data = []
    for index, text in enumerate(texts):
        # Component 0 is the input's length, so tests can tell which vector belongs to which.
        vector = [float(len(text))]
        vector += [zlib.crc32(f"{j}:{text}".encode()) % 1000 / 1000 for j in range(1, dimension)]
        data.append({"object": "embedding", "index": index, "embedding": vector})
    if steer.reverse:
        data.reverse()
    tokens = sum(len(text.split()) for text in texts)
    return {
        "object": "list",
        "model": body.get("model", ""),
        "data": data,
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }


def tokenized(steer: Steer) -> dict[str, Any]:
    """vLLM's answer to POST /tokenize (llama.cpp's server's, with `no-count`)."""
    if steer.no_count:
        return {"tokens": []}
    tokens = list(range(PROMPT_TOKENS))
    return {"count": PROMPT_TOKENS, "max_model_len": 4096, "tokens": tokens, "token_strs": None}


ROUTES = {
    "/chat/completions": "chat",
    "/completions": "completions",
    "/fim/completions": "fim",
    "/embeddings": "embeddings",
}


async def read_body(receive: Receive) -> bytes:
    parts = []
    while True:
        message = await receive()
        parts.append(message.get("body", b""))
        if not message.get("more_body"):
            return b"".join(parts)


async def send_bytes(
    send: Send,
    status: int,
    content: bytes,
    headers: Sequence[tuple[bytes, bytes]] = JSON,
    first_byte_ms: int = 0,
) -> None:
    all_headers = [*headers, (b"content-length", str(len(content)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": all_headers})
    if first_byte_ms:
        await asyncio.sleep(first_byte_ms / 1000)
    await send({"type": "http.response.body", "body": content})


class StubUpstream:
    """The ASGI app. Its records live on the instance: one process, one stub."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.records: dict[str, list[dict[str, Any]]] = defaultdict(list)
        self.attempts: dict[str, int] = defaultdict(int)
        self.requests = 0
        self.client_ports: set[int] = set()
        self.streams: dict[str, int] = defaultdict(int)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        path: str = scope["path"]
        if path.startswith("/v1/"):
            path = path[3:]
        method = scope["method"]
        if method == "POST" and scope["path"] == "/tokenize":
            await self._post("tokenize", scope, receive, send)
        elif method == "POST" and path in ROUTES:
            await self._post(ROUTES[path], scope, receive, send)
        elif method == "GET" and path == "/health":
            await send_bytes(send, 200, b'{"status":"ok"}')
        elif method == "GET" and path == "/models":
            model = {"id": "stub-model", "object": "model", "created": 0, "owned_by": "stub"}
            await send_bytes(send, 200, orjson.dumps({"object": "list", "data": [model]}))
        elif method == "GET" and path == "/stub/stats":
            stats = {
                "requests": self.requests,
                "client_ports": len(self.client_ports),
                "streams": self.streams,
            }
            await send_bytes(send, 200, orjson.dumps(stats))
        elif method == "GET" and path.startswith("/stub/requests/"):
            tag = path.removeprefix("/stub/requests/")
            await send_bytes(send, 200, orjson.dumps(self.records.get(tag, [])))
        elif method == "DELETE" and path == "/stub/requests":
            self.reset()
            await send_bytes(send, 204, b"")
        else:
            await send_bytes(send, 404, error_body(404, "openai"))

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _post(self, kind: str, scope: Scope, receive: Receive, send: Send) -> None:
        raw = await read_body(receive)
        try:
            body = orjson.loads(raw)
        except orjson.JSONDecodeError:
            body = None
        if not isinstance(body, dict):
            await send_bytes(send, 400, error_body(400, "openai"))
            return
        text = steering_text(kind, body)
        steer = Steer.parse(text)
        self.requests += 1
        client = scope.get("client")
        if client:
            self.client_ports.add(client[1])
        attempt = 0
        record: dict[str, Any] | None = None
        if steer.tag is not None or steer.fail is not None:
            key = steer.tag or text
            self.attempts[key] += 1
            attempt = self.attempts[key]
        if steer.tag is not None:
            headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
            record = {
                "attempt": attempt,
                "path": scope["path"],
                "body": body,
                "headers": {k: v for k, v in headers.items() if k in RECORDED_HEADERS},
                "client": list(client) if client else None,
                "stream": None,
            }
            self.records[steer.tag].append(record)
        if steer.sleep_ms:
            await asyncio.sleep(steer.sleep_ms / 1000)
        status = steer.status
        if status is None and steer.fail is not None and attempt <= steer.fail[0]:
            status = steer.fail[1]
        if status is not None:
            headers_out = (
                [(b"content-type", b"text/plain")] if steer.error_body == "text" else [*JSON]
            )
            if steer.retry_after is not None:
                headers_out.append((b"retry-after", steer.retry_after.encode()))
            await send_bytes(send, status, error_body(status, steer.error_body), headers_out)
            return
        if kind == "tokenize":
            await send_bytes(send, 200, orjson.dumps(tokenized(steer)))
            return
        if kind == "embeddings":
            content = orjson.dumps(embeddings(body, steer))
            await send_bytes(send, 200, content, first_byte_ms=steer.first_byte_ms)
            return
        answer = make_answer(steer, body)
        if body.get("stream"):
            frames = stream_frames(kind, body, steer, answer)
            await self._stream(frames, steer, record, receive, send)
            return
        if steer.invalid_json:
            content = b'{"choices": [this is not json'
        else:
            content = orjson.dumps(plain_answer(kind, body, answer))
        await send_bytes(send, 200, content, first_byte_ms=steer.first_byte_ms)

    async def _stream(
        self,
        frames: list[bytes],
        steer: Steer,
        record: dict[str, Any] | None,
        receive: Receive,
        send: Send,
    ) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": SSE})
        # The request body is read: the next message is http.disconnect, when the client leaves.
        gone = asyncio.ensure_future(receive())
        outcome = "cut"
        if record is not None:
            record["stream"] = "open"
        try:
            if steer.first_byte_ms:
                await asyncio.wait({gone}, timeout=steer.first_byte_ms / 1000)
            for i, frame in enumerate(frames):
                if i and steer.chunk_delay_ms:
                    await asyncio.wait({gone}, timeout=steer.chunk_delay_ms / 1000)
                if gone.done():
                    return
                await send({"type": "http.response.body", "body": frame, "more_body": True})
                if steer.die and i == 1:
                    outcome = "died"
                    # An exception after the response started makes the server drop the
                    # connection without ending the chunked body: a crash, as the client sees it.
                    raise ConnectionAbortedError("stream-then-die")
            await send({"type": "http.response.body", "body": b"", "more_body": False})
            outcome = "completed"
        finally:
            gone.cancel()
            self.streams[outcome] += 1
            if record is not None:
                record["stream"] = outcome


def create_app() -> StubUpstream:
    """A fresh stub (the factory for `uvicorn --factory`)."""
    return StubUpstream()


def main() -> None:
    import uvicorn

    parser = argparse.ArgumentParser(description="OpenAI-compatible stub upstream")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8001)
    parser.add_argument("--log-level", default="warning")
    args = parser.parse_args()
    uvicorn.run(
        create_app(), host=args.host, port=args.port, log_level=args.log_level, access_log=False
    )


if __name__ == "__main__":
    main()
