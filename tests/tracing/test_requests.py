"""The server span of a request joins the caller's W3C trace; auth, limits and the engine call are
its children; the upstream receives the engine span as its parent; nothing secret is recorded."""

from __future__ import annotations

import httpx

from tests.engines.openai_compat.support import new_tag
from tests.support.app_fixtures import API_KEY
from tests.tracing.collector import Span
from tests.tracing.conftest import MODEL, Traced, new_trace, one, traceparent

SECRET_WORDS = "correct-horse-battery-staple"


def _chat(traced: Traced, content: str, *, stream: bool = False, **headers: str) -> httpx.Response:
    body = {"model": MODEL, "messages": [{"role": "user", "content": content}], "stream": stream}
    return httpx.post(
        f"{traced.url}/v1/chat/completions",
        json=body,
        headers={**traced.headers, **headers},
        timeout=30,
    )


def _wait_trace(traced: Traced, trace_id: str, *names: str) -> list[Span]:
    def check(spans: list[Span]) -> bool:
        seen = {s.name for s in spans if s.trace_id == trace_id}
        return all(name in seen for name in names)

    traced.collector.wait_for(check, f"spans {names} of trace {trace_id}")
    return traced.collector.trace(trace_id)


def _no_secrets(spans: list[Span], *secrets: str) -> None:
    for span in spans:
        for value in span.attribute_values():
            for secret in secrets:
                assert secret not in value, (span.name, value)


def test_request_span_joins_the_callers_trace_with_auth_limits_and_engine_children(
    traced: Traced,
) -> None:
    trace_id, caller = new_trace()
    tag = new_tag()
    response = _chat(traced, f"tag:{tag} {SECRET_WORDS}", traceparent=traceparent(trace_id, caller))
    assert response.status_code == 200, response.text

    engine_name = f"chat {MODEL}"
    route = "POST /v1/chat/completions"
    spans = _wait_trace(traced, trace_id, route, "auth", "limits", engine_name)
    server = one(spans, name=route)
    assert server.kind == "server"
    assert server.parent_id == caller  # the caller's span is the parent
    assert server.service == "maestrale"
    assert server.attributes["http.request.method"] == "POST"
    assert server.attributes["http.route"] == "/v1/chat/completions"
    assert server.attributes["http.response.status_code"] == 200
    assert server.attributes["maestrale.request_id"] == response.headers["x-request-id"]
    assert server.attributes["maestrale.workspace.id"]
    assert not server.error

    for name in ("auth", "limits", engine_name):
        assert one(spans, name=name).parent_id == server.span_id, name
    engine = one(spans, name=engine_name)
    assert engine.kind == "client"
    assert engine.attributes["gen_ai.operation.name"] == "chat"
    assert engine.attributes["gen_ai.request.model"] == MODEL
    assert engine.attributes["gen_ai.provider.name"] == "openai_compat"
    usage = response.json()["usage"]
    assert engine.attributes["gen_ai.usage.input_tokens"] == usage["prompt_tokens"]
    assert engine.attributes["gen_ai.usage.output_tokens"] == usage["completion_tokens"]

    # The upstream sees the engine call as its parent, in the caller's trace.
    sent = traced.upstream_record(tag)["headers"]["traceparent"]
    assert sent == traceparent(trace_id, engine.span_id)
    _no_secrets(spans, API_KEY, SECRET_WORDS, tag)


def test_streamed_call_is_traced_to_its_end(traced: Traced) -> None:
    trace_id, caller = new_trace()
    tag = new_tag()
    response = _chat(
        traced,
        f"tag:{tag} words:5 {SECRET_WORDS}",
        stream=True,
        traceparent=traceparent(trace_id, caller),
    )
    assert response.status_code == 200, response.text
    assert "data: [DONE]" in response.text

    engine_name = f"chat {MODEL}"
    spans = _wait_trace(traced, trace_id, "POST /v1/chat/completions", engine_name)
    server = one(spans, kind="server")
    engine = one(spans, name=engine_name)
    assert engine.parent_id == server.span_id
    assert engine.attributes["gen_ai.usage.output_tokens"] == 5
    assert not engine.error
    record = traced.upstream_record(tag)
    assert record["headers"]["traceparent"] == traceparent(trace_id, engine.span_id)
    _no_secrets(spans, API_KEY, SECRET_WORDS, tag)


def test_failures_mark_the_spans_without_their_messages(traced: Traced) -> None:
    # The upstream fails with a 500 (not retried): the client gets a 502, an error on both spans.
    trace_id, caller = new_trace()
    tag = new_tag()
    response = _chat(traced, f"tag:{tag} status:500", traceparent=traceparent(trace_id, caller))
    assert response.status_code == 502, response.text
    engine_name = f"chat {MODEL}"
    spans = _wait_trace(traced, trace_id, "POST /v1/chat/completions", engine_name)
    server = one(spans, kind="server")
    assert server.error
    assert server.attributes["http.response.status_code"] == 502
    engine = one(spans, name=engine_name)
    assert engine.error
    assert engine.attributes["error.type"] == "EngineError"
    _no_secrets(spans, tag)

    # A refused key: a 401, not a server error; the key is nowhere.
    trace_id, caller = new_trace()
    wrong_key = "msk_wrong_key_that_must_not_be_recorded_0123456789"
    refused = httpx.post(
        f"{traced.url}/v1/chat/completions",
        json={"model": MODEL, "messages": [{"role": "user", "content": "hi"}]},
        headers={
            "Authorization": f"Bearer {wrong_key}",
            "traceparent": traceparent(trace_id, caller),
        },
        timeout=30,
    )
    assert refused.status_code == 401
    spans = _wait_trace(traced, trace_id, "POST /v1/chat/completions", "auth")
    server = one(spans, kind="server")
    assert not server.error
    assert server.attributes["http.response.status_code"] == 401
    assert "maestrale.workspace.id" not in server.attributes
    _no_secrets(spans, wrong_key)


def test_a_request_without_a_caller_trace_starts_one(traced: Traced) -> None:
    tag = new_tag()
    response = _chat(traced, f"tag:{tag}")
    assert response.status_code == 200, response.text
    request_id = response.headers["x-request-id"]

    def arrived(spans: list[Span]) -> bool:
        return any(s.attributes.get("maestrale.request_id") == request_id for s in spans)

    spans = traced.collector.wait_for(arrived, "the server span")
    server = next(s for s in spans if s.attributes.get("maestrale.request_id") == request_id)
    assert server.parent_id == ""
    engine_name = f"chat {MODEL}"
    spans = _wait_trace(traced, server.trace_id, engine_name)
    engine = one(spans, name=engine_name)
    assert traced.upstream_record(tag)["headers"]["traceparent"] == traceparent(
        server.trace_id, engine.span_id
    )


def test_a_caller_that_does_not_sample_is_followed(traced: Traced) -> None:
    # The caller's "not sampled" flag is honoured: no span of its trace is exported, and the
    # upstream still gets the trace, unsampled.
    trace_id, caller = new_trace()
    tag = new_tag()
    unsampled = traceparent(trace_id, caller, sampled=False)
    assert _chat(traced, f"tag:{tag}", traceparent=unsampled).status_code == 200
    sent = traced.upstream_record(tag)["headers"]["traceparent"]
    assert sent.startswith(f"00-{trace_id}-")
    assert sent.endswith("-00")

    later, later_caller = new_trace()  # exported after anything of the first request
    assert _chat(traced, "later", traceparent=traceparent(later, later_caller)).status_code == 200
    _wait_trace(traced, later, f"chat {MODEL}")
    assert traced.collector.trace(trace_id) == []


def test_probes_are_not_traced(traced: Traced) -> None:
    trace_id, caller = new_trace()
    for path in ("/health", "/metrics"):
        response = httpx.get(
            f"{traced.url}{path}",
            headers={"traceparent": traceparent(trace_id, caller)},
            timeout=30,
        )
        assert response.status_code == 200
    later, later_caller = new_trace()
    assert _chat(traced, "later", traceparent=traceparent(later, later_caller)).status_code == 200
    _wait_trace(traced, later, f"chat {MODEL}")
    assert traced.collector.trace(trace_id) == []
