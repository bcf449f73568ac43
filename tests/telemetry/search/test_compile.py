"""Search expressions compiled to SQL and run over a few spans, traces and logs on both
databases; and the compiler's refusals (unknown field, operator, value, regular expression)."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import insert, select

from maestrale.core.db import Database
from maestrale.telemetry.search.compile import where
from maestrale.telemetry.search.entities import LOGS, SPANS, TRACES
from maestrale.telemetry.search.errors import SearchError
from maestrale.telemetry.search.model import Entity
from maestrale.telemetry.tables import TelemetryLog, TelemetrySpan, TelemetryTrace

NS = 1_000_000_000
BASE = 1_767_225_600 * NS  # 2026-01-01T00:00:00Z
WS, OTHER = "ws-1", "ws-2"


def _span(ws: str, span_id: str, start: int, duration: int, **values: Any) -> dict[str, Any]:
    return {
        "organization_id": "org",
        "workspace_id": ws,
        "trace_id": "t" * 32,
        "span_id": span_id,
        "start_ns": start,
        "end_ns": start + duration,
        "duration_ns": duration,
        **values,
    }


SPAN_ROWS = [
    _span(
        WS,
        "s1",
        BASE,
        5 * NS,
        name="chat mistral",
        kind="SPAN_KIND_CLIENT",
        service_name="api",
        status_code="Error",
        request_model="mistral-large",
        attributes={
            "gen_ai.request.temperature": 0.7,
            "http.status_code": 500,
            "flag": True,
            "gen_ai.output.messages": [{"role": "assistant"}],
            "gen_ai.response.finish_reasons": ["stop"],
            "note": "100% Sure_x",
        },
    ),
    _span(
        WS,
        "s2",
        BASE + 60 * NS,
        NS,
        name="execute_tool search",
        kind="SPAN_KIND_INTERNAL",
        service_name="worker",
        status_code="Ok",
        attributes={"gen_ai.request.temperature": 0.2, "http.status_code": 200, "flag": False},
        resource_attributes={"note": "100 percent"},
    ),
    # Another workspace's span matches most expressions, and is never found.
    _span(
        OTHER, "s3", BASE, 5 * NS, name="chat mistral", kind="SPAN_KIND_CLIENT", service_name="api"
    ),
]
TRACE_ROWS = [
    {
        "organization_id": "org",
        "workspace_id": WS,
        "trace_id": "t1",
        "start_ns": BASE,
        "end_ns": BASE + NS,
        "duration_ns": NS,
        "status_code": "Error",
        "models_used": ["mistral-large", "codestral"],
        "tools_used": ["search"],
    },
    {
        "organization_id": "org",
        "workspace_id": WS,
        "trace_id": "t2",
        "start_ns": BASE + 3600 * NS,
        "end_ns": BASE + 3601 * NS,
        "duration_ns": NS,
        "models_used": [],
        "tools_used": ["web"],
        "first_turn_last_input_message": "Bonjour le monde",
    },
]
LOG_ROWS = [
    {
        "organization_id": "org",
        "workspace_id": WS,
        "timestamp_ns": BASE,
        "body": "user logged in",
        "severity_text": "INFO",
        "attributes": {"user.id": "u1", "attempt": 3},
    },
    {
        "organization_id": "org",
        "workspace_id": WS,
        "timestamp_ns": BASE + NS,
        "body": "disk FULL",
        "severity_text": "ERROR",
        "attributes": {"attempt": 1},
    },
]

CASES: list[tuple[Entity, str, set[str]]] = [
    (SPANS, "service_name = 'api'", {"s1"}),
    (SPANS, "service_name != 'api'", {"s2"}),
    (SPANS, "duration_ns > 2000000000", {"s1"}),
    (SPANS, "duration_ns BETWEEN 0 AND 2000000000", {"s2"}),
    (SPANS, "span_kind IN ('SPAN_KIND_INTERNAL')", {"s2"}),
    (SPANS, "span_name CONTAINS 'MISTRAL'", {"s1"}),
    (SPANS, "span_name LIKE 'chat%'", {"s1"}),
    (SPANS, "span_name LIKE 'Chat%'", set()),
    (SPANS, "span_name ILIKE 'CHAT%'", {"s1"}),
    (SPANS, "span_name NOT LIKE 'chat%'", {"s2"}),
    (SPANS, "span_name REGEXP '^exec.*search$'", {"s2"}),
    (SPANS, "start_time >= '2026-01-01T00:00:30Z'", {"s2"}),
    (SPANS, "span_attributes['http.status_code'] >= 500", {"s1"}),
    (SPANS, "span_attributes['http.status_code'] = '500'", {"s1"}),
    (SPANS, "span_attributes.flag = TRUE", {"s1"}),
    (SPANS, "span_attributes.`gen_ai.request.temperature` < 0.5", {"s2"}),
    (SPANS, "span_attributes.note LIKE '100\\% S%'", {"s1"}),
    (SPANS, "span_attributes['note'] LIKE '%Sure\\_x'", {"s1"}),
    (SPANS, "resource_attributes['note'] ILIKE '100 PERCENT'", {"s2"}),
    (SPANS, "span_attributes['missing'] NOT EXISTS", {"s1", "s2"}),
    (SPANS, "span_attributes['gen_ai.output.messages'] EXISTS", {"s1"}),
    (SPANS, "request_temperature > 0.5", {"s1"}),
    (SPANS, "request_temperature != 0.7", {"s2"}),
    (SPANS, "request_seed NOT EXISTS", {"s1", "s2"}),
    (SPANS, "request_model = 'mistral-large'", {"s1"}),
    (SPANS, "output_messages CONTAINS 'assistant'", {"s1"}),
    (SPANS, "response_finish_reasons CONTAINS 'stop'", {"s1"}),
    (SPANS, "'EXECUTE_TOOL'", {"s2"}),
    (SPANS, "text CONTAINS 'assistant'", {"s1"}),
    (SPANS, "NOT (service_name = 'api')", {"s2"}),
    (SPANS, "service_name = 'api' OR span_kind = 'SPAN_KIND_INTERNAL'", {"s1", "s2"}),
    (SPANS, "", {"s1", "s2"}),
    (TRACES, "models_used CONTAINS 'codestral'", {"t1"}),
    (TRACES, "models_used IN ('x', 'mistral-large')", {"t1"}),
    (TRACES, "models_used NOT CONTAINS 'codestral'", {"t2"}),
    (TRACES, "models_used NOT EXISTS", {"t2"}),
    (TRACES, "status_code = 'Error'", {"t1"}),
    (TRACES, "'bonjour'", {"t2"}),
    (LOGS, "severity_text = 'ERROR'", {"disk FULL"}),
    (LOGS, "body CONTAINS 'full'", {"disk FULL"}),
    (LOGS, "log_attributes['attempt'] > 2", {"user logged in"}),
    (LOGS, "log_attributes['user.id'] IN ('u1', 'u2')", {"user logged in"}),
    (LOGS, "timestamp < '2026-01-01T00:00:01Z'", {"user logged in"}),
]
_KEYS = {
    "spans": TelemetrySpan.span_id,
    "traces": TelemetryTrace.trace_id,
    "logs": TelemetryLog.body,
}


@pytest.mark.both_databases("maestrale.telemetry.search.compile")
async def test_expressions_find_their_records(db: Database) -> None:
    async with db.transaction() as work:
        await work.session.execute(insert(TelemetrySpan), SPAN_ROWS)
        await work.session.execute(insert(TelemetryTrace), TRACE_ROWS)
        await work.session.execute(insert(TelemetryLog), LOG_ROWS)
    dialect = "sqlite" if db.is_sqlite else "postgresql"
    failures = []
    async with db.transaction() as work:
        for entity, expression, expected in CASES:
            stmt = select(_KEYS[entity.name]).where(
                entity.workspace == WS, where(entity, expression, dialect)
            )
            found = set((await work.session.execute(stmt)).scalars())
            if found != expected:
                failures.append((entity.name, expression, found, expected))
    assert not failures


@pytest.mark.parametrize(
    ("entity", "expression", "message"),
    [
        (SPANS, "nope = 1", "unknown field 'nope' at position 1"),
        (SPANS, "span_kind LIKE 'x%'", "'span_kind' does not support LIKE"),
        (SPANS, "duration_ns CONTAINS 'x'", "does not support CONTAINS"),
        (SPANS, "duration_ns = 'x'", "takes a number"),
        (SPANS, "service_name = 1", "takes a quoted string"),
        (SPANS, "start_time > 'yesterday'", "ISO 8601"),
        (SPANS, "start_time > '9999-12-31T00:00:00Z'", "past 64 bits"),
        (SPANS, "span_name REGEXP '(a)\\1'", "invalid regular expression"),
        (SPANS, "span_name REGEXP '" + "a" * 1001 + "'", "at most 1000 characters"),
        (SPANS, "span_name LIKE 'a\\'", "lone backslash"),
        (SPANS, "span_attributes = 'x'", "is a map: name one of its keys"),
        (SPANS, "span_name['k'] = 'x'", "not a map field"),
        (SPANS, "span_attributes['a\"b'] = 'x'", "double quote"),
        (SPANS, "span_attributes['k'] LIKE 1", "takes a quoted string"),
        (SPANS, "span_attributes['k'] IN ('a', 1)", "values of one type"),
        (SPANS, "span_attributes['k'] > TRUE", "does not take TRUE or FALSE"),
        (TRACES, "models_used CONTAINS 1", "takes a quoted string"),
        (TRACES, "text EXISTS", "'text' does not support EXISTS"),
    ],
)
def test_refusals(entity: Entity, expression: str, message: str) -> None:
    with pytest.raises(SearchError) as caught:
        where(entity, expression, "sqlite")
    assert caught.value.status_code == 400
    assert message in caught.value.message
