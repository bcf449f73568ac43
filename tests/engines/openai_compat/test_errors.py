"""Upstream failures over real HTTP: status mapping, messages, timeouts, and retries that happen
only while nothing has been passed on."""

from __future__ import annotations

import time

import pytest

from maestrale.engines.openai_compat import OpenAICompatEngine
from maestrale.engines.types import ChatChunk, EngineError
from tests.engines.openai_compat.conftest import MakeEngine
from tests.engines.openai_compat.stub_upstream import TEXT
from tests.engines.openai_compat.support import (
    Stub,
    chat_request,
    collect,
    content_of,
    drain,
    free_port,
    new_tag,
)


async def chat_error(engine: OpenAICompatEngine, text: str) -> EngineError:
    with pytest.raises(EngineError) as caught:
        await engine.chat(chat_request(text))
    return caught.value


async def stream_error(
    engine: OpenAICompatEngine, text: str
) -> tuple[EngineError, list[ChatChunk]]:
    received: list[ChatChunk] = []
    with pytest.raises(EngineError) as caught:
        await drain(engine.chat_stream(chat_request(text)), received)
    return caught.value, received


async def attempts(stub: Stub, tag: str) -> int:
    return len(await stub.records(tag))


@pytest.mark.parametrize(
    ("style", "message"),
    [
        ("openai", "stub says 400"),
        ("message", "stub says 400"),
        ("detail", "stub says 400"),
        ("detail-list", "body.messages: stub says 400"),
        ("text", "stub says 400"),
    ],
)
async def test_4xx_keeps_status_and_upstream_message(
    engine: OpenAICompatEngine, style: str, message: str
) -> None:
    error = await chat_error(engine, f"status:400 error-body:{style}")

    assert error.status == 400
    assert error.message == message
    assert error.code == "upstream_error"


async def test_4xx_is_not_retried(stub: Stub, engine: OpenAICompatEngine) -> None:
    tag = new_tag()

    error = await chat_error(engine, f"status:404 tag:{tag}")

    assert error.status == 404
    assert await attempts(stub, tag) == 1


async def test_500_is_an_upstream_error_not_retried(stub: Stub, engine: OpenAICompatEngine) -> None:
    tag = new_tag()

    error = await chat_error(engine, f"status:500 tag:{tag}")

    assert error.status == 500
    assert error.code == "upstream_error"
    assert "stub says 500" in error.message
    assert await attempts(stub, tag) == 1


async def test_503_is_retried_then_reported(stub: Stub, make_engine: MakeEngine) -> None:
    engine = make_engine(retries=2, retry_backoff=0.01)
    tag = new_tag()

    error = await chat_error(engine, f"status:503 tag:{tag}")

    assert error.status == 503
    assert await attempts(stub, tag) == 3


async def test_503_then_success(stub: Stub, make_engine: MakeEngine) -> None:
    engine = make_engine(retry_backoff=0.01)
    tag = new_tag()

    result = await engine.chat(chat_request(f"fail:2:503 tag:{tag}"))

    assert result.choices[0].message["content"] == TEXT
    assert [r["attempt"] for r in await stub.records(tag)] == [1, 2, 3]


async def test_retries_can_be_turned_off(stub: Stub, make_engine: MakeEngine) -> None:
    engine = make_engine(retries=0)
    tag = new_tag()

    error = await chat_error(engine, f"fail:1:502 tag:{tag}")

    assert error.status == 502
    assert await attempts(stub, tag) == 1


async def test_streams_are_retried_before_the_first_chunk(
    stub: Stub, make_engine: MakeEngine
) -> None:
    engine = make_engine(retry_backoff=0.01)
    tag = new_tag()

    chunks = await collect(engine.chat_stream(chat_request(f"fail:1:504 tag:{tag}")))

    assert content_of(chunks) == TEXT
    assert await attempts(stub, tag) == 2


async def test_no_retry_after_the_first_chunk(stub: Stub, make_engine: MakeEngine) -> None:
    engine = make_engine(retry_backoff=0.01)
    tag = new_tag()

    error, received = await stream_error(engine, f"stream-then-die tag:{tag}")

    assert received, "the chunks before the crash were passed on"
    assert (error.status, error.message) == (502, "upstream stream interrupted")
    assert await attempts(stub, tag) == 1
    assert (await stub.record(tag))["stream"] == "died"


async def test_429_with_short_retry_after_is_retried(
    stub: Stub, engine: OpenAICompatEngine
) -> None:
    tag = new_tag()

    result = await engine.chat(chat_request(f"fail:1:429 retry-after:0.2 tag:{tag}"))

    assert result.choices[0].finish_reason == "stop"
    assert await attempts(stub, tag) == 2


@pytest.mark.parametrize("header", ["retry-after:30", ""])
async def test_429_without_a_short_retry_after_is_passed_on(
    stub: Stub, engine: OpenAICompatEngine, header: str
) -> None:
    tag = new_tag()

    error = await chat_error(engine, f"fail:1:429 {header} tag:{tag}")

    assert error.status == 429
    assert await attempts(stub, tag) == 1


@pytest.mark.parametrize("streamed", [False, True])
async def test_refused_connection_is_unreachable(make_engine: MakeEngine, streamed: bool) -> None:
    engine = make_engine(base_url=f"http://127.0.0.1:{free_port()}/v1", retry_backoff=0.01)

    if streamed:
        error, _ = await stream_error(engine, "hello")
    else:
        error = await chat_error(engine, "hello")

    assert error.status == 502
    assert error.code == "upstream_unreachable"
    assert error.message.startswith("upstream unreachable: ")


async def test_slow_upstream_times_out(make_engine: MakeEngine) -> None:
    engine = make_engine(timeout=0.5)
    started = time.monotonic()

    error = await chat_error(engine, "sleep:5000")

    assert (error.status, error.code) == (504, "upstream_timeout")
    assert time.monotonic() - started < 4, "the call gave up long before the upstream answered"


async def test_slow_first_byte_of_a_stream_times_out(make_engine: MakeEngine) -> None:
    engine = make_engine(timeout=0.5)

    error, received = await stream_error(engine, "slow-first-byte:5000")

    assert (error.status, error.code) == (504, "upstream_timeout")
    assert received == []


async def test_stalled_stream_times_out_midway(make_engine: MakeEngine) -> None:
    engine = make_engine(timeout=1)

    error, received = await stream_error(engine, "words:3 chunk-delay:3000")

    assert (error.status, error.code) == (504, "upstream_timeout")
    assert len(received) == 1


async def test_error_object_in_a_stream(engine: OpenAICompatEngine) -> None:
    # An upstream that reports a failure as a stream event (vLLM does) is an upstream error.
    from maestrale.engines.openai_compat.stream import ChunkAssembler

    assembler = ChunkAssembler()
    with pytest.raises(EngineError) as caught:
        assembler.feed(b'{"error": {"message": "out of memory", "code": 500}}')

    assert (caught.value.status, caught.value.message) == (500, "out of memory")
