"""Trigger filters: the event document the SDK's example reads, and the guards of evaluation."""

from __future__ import annotations

import orjson
import pytest

from maestrale.inbound.triggers.filters import (
    FilterFailed,
    InvalidFilter,
    compile_filter,
    event_document,
    matches,
)

EXAMPLE = "event_type == 'push' && repository.name == 'dashboard'"


def test_the_sdk_example_reads_the_body_fields_and_event_type() -> None:
    body = orjson.dumps({"repository": {"name": "dashboard"}, "event_type": "spoofed"}).decode()
    doc = event_document(body, "push", "d-1", {"x-github-event": "push"})
    assert matches(EXAMPLE, doc)
    assert matches("body.event_type == 'spoofed' && headers.\"x-github-event\" == 'push'", doc)
    assert not matches(EXAMPLE, event_document(body, "issues", "d-2", {}))
    # A body that is not JSON is text under `body`.
    text = event_document("hello /call x", "note", None, {})
    assert matches("contains(body, 'hello') && event_id == null", text)
    assert matches("contains(['push', 'pull_request'], event_type)", doc)


def test_evaluation_is_bounded_and_failures_are_reported() -> None:
    big = event_document(
        orjson.dumps({"a": [{"b": i} for i in range(100_000)]}).decode(), "t", None, {}
    )
    with pytest.raises(FilterFailed, match="too many steps"):
        matches("length(a[?b == `-1`]) == `0`", big)
    with pytest.raises(FilterFailed, match="failed"):
        matches("abs(a)", big)
    for expression in ("[a, b][]", "{x: a}", "a ==", "(" * 3000 + "a" + ")" * 3000, "a" * 5000):
        with pytest.raises(InvalidFilter):
            compile_filter(expression)
    compile_filter("[`1`, 'a'] | contains(@, 'a')")
