"""Each database statement of a traced request is a span under the request's, with the statement's
text and never its parameters."""

from __future__ import annotations

import httpx

from tests.tracing.collector import Span
from tests.tracing.conftest import Traced, descends_from, new_trace, one, traceparent


def _statements(spans: list[Span]) -> list[Span]:
    return [s for s in spans if "db.query.text" in s.attributes]


def test_statements_are_children_of_the_request_without_their_parameters(traced: Traced) -> None:
    trace_id, caller = new_trace()
    name = "payroll-of-the-board-7f3a.jsonl"
    content = b'{"custom_id": "confidential-line-91c2"}\n'
    response = httpx.post(
        f"{traced.url}/v1/files",
        data={"purpose": "batch"},
        files={"file": (name, content, "application/octet-stream")},
        headers={**traced.headers, "traceparent": traceparent(trace_id, caller)},
        timeout=30,
    )
    assert response.status_code == 200, response.text
    file_id = response.json()["id"]

    def inserted(spans: list[Span]) -> bool:
        # The server span ends after the response is sent: it may come in a later export than
        # the statements'.
        ours = [s for s in spans if s.trace_id == trace_id]
        return any(s.kind == "server" for s in ours) and any(
            "INSERT INTO files" in s.attributes.get("db.query.text", "") for s in ours
        )

    traced.collector.wait_for(inserted, "the INSERT of the file's row and the server span")
    spans = traced.collector.trace(trace_id)
    server = one(spans, kind="server")
    assert server.attributes["http.route"] == "/v1/files"
    statements = _statements(spans)
    assert statements
    for statement in statements:
        assert statement.kind == "client"
        assert statement.attributes["db.system.name"] == "sqlite"
        assert statement.name == statement.attributes["db.operation.name"]
        assert descends_from(statement, server, spans), statement
        text = statement.attributes["db.query.text"]
        # Parameters stay out: placeholders in the text, no value anywhere.
        for value in (name, "confidential-line-91c2", file_id):
            assert value not in text
    insert = next(s for s in statements if "INSERT INTO files" in s.attributes["db.query.text"])
    assert insert.name == "INSERT"
    assert "?" in insert.attributes["db.query.text"]
    for span in spans:
        for value in span.attribute_values():
            assert name not in value
            assert "confidential-line-91c2" not in value


def test_untraced_work_makes_no_statement_spans(traced: Traced) -> None:
    # The accounting writer and the job queue's polling run outside any request or job: every
    # statement exported belongs to a trace with a server or job span.
    trace_id, caller = new_trace()
    headers = {**traced.headers, "traceparent": traceparent(trace_id, caller)}
    assert httpx.get(f"{traced.url}/v1/files", headers=headers, timeout=30).status_code == 200
    traced.collector.wait_for(
        lambda spans: any(s.trace_id == trace_id and s.kind == "server" for s in spans),
        "the listing's server span",
    )
    spans = traced.collector.snapshot()
    roots = {s.trace_id for s in spans if s.kind in ("server", "consumer")}
    orphans = [s for s in _statements(spans) if s.trace_id not in roots]
    assert orphans == []
    assert _statements(traced.collector.trace(trace_id))  # the listing's own SELECTs are there
