"""An execution's spans as the workflows API shows them: the span tree below the execution's own
root span, and the events the worker recorded on those spans (its custom events and task
progress, told by their `wf.type` attribute)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson

from maestrale.telemetry.tables import TelemetrySpan
from maestrale.workflows.telemetry import links
from maestrale.workflows.telemetry.schemas import (
    AttributeValue,
    ProgressTraceEventOut,
    SummarySpanOut,
    TraceEventOut,
)

_PROGRESS_STATUSES = ("RUNNING", "COMPLETED", "FAILED")


def attribute_values(attributes: Any) -> dict[str, AttributeValue]:
    """Stored attributes as the API's values (a map as its JSON text)."""
    if not isinstance(attributes, dict):
        return {}
    return {
        str(key): orjson.dumps(value).decode() if isinstance(value, dict) else value
        for key, value in attributes.items()
    }


def root_span(spans: Sequence[TelemetrySpan], execution_id: str) -> TelemetrySpan | None:
    """The execution's root: the first of its spans (those carrying its id) whose parent is
    none of them; a child execution's trace is its root's, so the trace's root may be another
    execution's. Without such spans, the trace's first span without a known parent."""
    ids = {span.span_id for span in spans}
    own = [s for s in spans if s.attributes.get(links.SPAN_EXECUTION) == execution_id]
    own_ids = {span.span_id for span in own}
    for span in own:  # spans come by start
        if span.parent_span_id not in own_ids:
            return span
    return next((s for s in spans if s.parent_span_id not in ids), None)


def _int(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        return int(value)
    except ValueError:
        return None


def trace_event(span: TelemetrySpan, index: int, event: Any) -> TraceEventOut | None:
    """A stored span event as the API's event; None for one the worker did not record as an
    event of its own (no `wf.type`, such as an exception)."""
    if not isinstance(event, dict) or not isinstance(event.get("attributes"), dict):
        return None
    attributes = attribute_values(event["attributes"])
    kind = attributes.get(links.EVENT_TYPE)
    if kind not in ("EVENT", "EVENT_PROGRESS"):
        return None
    time_ns = _int(event.get("time_ns")) or span.start_ns
    common: dict[str, Any] = {
        "name": str(event.get("name") or ""),
        "id": str(attributes.get(links.EVENT_ID) or f"{span.span_id}-{index}"),
        "timestamp_unix_nano": time_ns,
        "attributes": attributes,
        "internal": attributes.get(links.EVENT_INTERNAL) is True,
    }
    if kind == "EVENT":
        return TraceEventOut(**common)
    status = attributes.get(links.PROGRESS_STATUS)
    error = attributes.get(links.PROGRESS_ERROR)
    return ProgressTraceEventOut(
        **common,
        status=status if status in _PROGRESS_STATUSES else "RUNNING",
        start_time_unix_ms=_int(attributes.get(links.PROGRESS_START_MS)) or time_ns // 10**6,
        end_time_unix_ms=_int(attributes.get(links.PROGRESS_END_MS)),
        error=None if error is None else str(error),
    )


def span_events(span: TelemetrySpan) -> list[TraceEventOut]:
    found = (trace_event(span, i, event) for i, event in enumerate(span.events or ()))
    return [event for event in found if event is not None]


def subtree(spans: Sequence[TelemetrySpan], root: TelemetrySpan) -> list[TelemetrySpan]:
    """`root` and the spans below it, by start."""
    children: dict[str, list[TelemetrySpan]] = {}
    for span in spans:
        children.setdefault(span.parent_span_id, []).append(span)
    out, todo, seen = [], [root], {root.span_id}
    while todo:
        span = todo.pop()
        out.append(span)
        for child in children.get(span.span_id, ()):
            if child.span_id not in seen:  # a malformed trace may loop
                seen.add(child.span_id)
                todo.append(child)
    return sorted(out, key=lambda s: (s.start_ns, s.id))


def span_tree(spans: Sequence[TelemetrySpan], root: TelemetrySpan) -> SummarySpanOut:
    nodes = {
        span.span_id: SummarySpanOut(
            span_id=span.span_id,
            name=span.name,
            start_time_unix_nano=span.start_ns,
            end_time_unix_nano=span.end_ns or None,
            attributes=attribute_values(span.attributes),
            events=span_events(span),
        )
        for span in subtree(spans, root)
    }
    for span in subtree(spans, root):  # by start: children come in order
        if span is not root and span.parent_span_id in nodes:
            nodes[span.parent_span_id].children.append(nodes[span.span_id])
    return nodes[root.span_id]


def execution_events(
    spans: Sequence[TelemetrySpan], root: TelemetrySpan, *, merge: bool, internal: bool
) -> list[TraceEventOut]:
    """The events of the execution's spans by time; `merge`: one per event id (a task's
    progress updates become its latest state, started when it first started)."""
    events = sorted(
        (event for span in subtree(spans, root) for event in span_events(span)),
        key=lambda e: e.timestamp_unix_nano,
    )
    if not internal:
        events = [event for event in events if not event.internal]
    if not merge:
        return events
    merged: dict[str, TraceEventOut] = {}
    for event in events:
        first = merged.get(event.id)
        if first is not None:
            event = event.model_copy(
                update={"attributes": {**first.attributes, **event.attributes}}
            )
            if isinstance(first, ProgressTraceEventOut) and isinstance(
                event, ProgressTraceEventOut
            ):
                event.start_time_unix_ms = first.start_time_unix_ms
        merged[event.id] = event
    return list(merged.values())
