"""Trigger filters: JMESPath expressions (the SDK's "jmespath expression to filter events, e.g.
event_type == 'push' && repository.name == 'dashboard'") over an event document.

The document a filter reads (`event_document`) is the delivery's JSON body's fields at the top
level (when the body is a JSON object), then `event_type` and `event_id` (the delivery's, as its
webhook read them: these win over body fields of the same names), then `body` (the whole body,
parsed when it is JSON, else its text) and `headers` (the headers the delivery kept), unless the
body has fields of those names. So GitHub's push reads `event_type == 'push' &&
repository.name == 'dashboard'`.

JMESPath evaluates data, never code, but some expressions cost more than their length: a
multi-select of anything but literals can double what it is given (`[@, @][]` repeated), so it
is refused at creation, and every evaluation runs under a budget of node visits. An expression
is at most `MAX_FILTER_CHARS` long and `MAX_DEPTH` deep. A filter that fails on an event
(budget spent, a function given the wrong type) does not match it: the caller records why.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson
from jmespath import exceptions as jmespath_errors
from jmespath.parser import Parser
from jmespath.visitor import Options, TreeInterpreter

MAX_FILTER_CHARS = 4096
MAX_DEPTH = 64
# Node visits one evaluation may make: far more than any filter over a webhook's event needs,
# far less than a second of CPU.
VISIT_BUDGET = 200_000
_MULTI_SELECT = frozenset({"multi_select_list", "multi_select_dict"})
_LITERALS = frozenset({"literal", "raw_string"})


class InvalidFilter(ValueError):
    """The expression is refused (the request's validation turns it into a 422)."""


class FilterFailed(Exception):
    """The filter could not be evaluated on an event (its message says why)."""


def compile_filter(expression: str) -> Any:
    """The parsed expression, or `InvalidFilter` (422) naming what is wrong with it."""
    if len(expression) > MAX_FILTER_CHARS:
        raise InvalidFilter(f"longer than {MAX_FILTER_CHARS} characters")
    try:
        parsed = Parser().parse(expression)
    except jmespath_errors.JMESPathError as exc:
        raise InvalidFilter(f"not a JMESPath expression: {exc}") from None
    except (RecursionError, ValueError, TypeError) as exc:
        raise InvalidFilter(f"not a JMESPath expression: {exc!r}") from None
    _check(parsed.parsed, 0)
    return parsed


def _check(node: Mapping[str, Any], depth: int) -> None:
    if depth > MAX_DEPTH:
        raise InvalidFilter(f"nested deeper than {MAX_DEPTH}")
    children = node.get("children") or []
    if node.get("type") in _MULTI_SELECT and not all(_literal(c) for c in children):
        raise InvalidFilter(
            "only literals may be multi-selected ([`1`, 'a']): a multi-select of the event's"
            " values could multiply it"
        )
    for child in children:
        if isinstance(child, Mapping):
            _check(child, depth + 1)


def _literal(node: Any) -> bool:
    if not isinstance(node, Mapping):
        return False
    if node.get("type") == "key_val_pair":  # a multi-select hash's entry: `{k: value}`
        return all(_literal(c) for c in node.get("children") or [])
    return node.get("type") in _LITERALS


class _Budgeted(TreeInterpreter):  # type: ignore[misc]  # jmespath ships no types
    def __init__(self, budget: int) -> None:
        super().__init__(Options())
        self.left = budget

    def visit(self, node: Any, *args: Any, **kwargs: Any) -> Any:
        self.left -= 1
        if self.left < 0:
            raise FilterFailed("the filter took too long on this event (too many steps)")
        return super().visit(node, *args, **kwargs)


def matches(expression: str, document: Any) -> bool:
    """Whether the filter holds for `document` (JMESPath truthiness: not false, null, empty).
    `FilterFailed` when it cannot be evaluated."""
    try:
        parsed = compile_filter(expression)
        result = _Budgeted(VISIT_BUDGET).visit(parsed.parsed, document)
    except FilterFailed:
        raise
    except jmespath_errors.JMESPathError as exc:
        raise FilterFailed(f"the filter failed on this event: {exc}") from None
    except (RecursionError, ValueError, TypeError, ArithmeticError) as exc:
        raise FilterFailed(f"the filter failed on this event: {exc!r}") from None
    return result not in (False, None, "", [], {})


def event_document(
    body: str | None,
    event_type: str | None,
    event_id: str | None,
    headers: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """The document filters read (module docstring)."""
    parsed: Any = body
    if body:
        try:
            parsed = orjson.loads(body)
        except orjson.JSONDecodeError:
            parsed = body
    document: dict[str, Any] = dict(parsed) if isinstance(parsed, dict) else {}
    document["event_type"] = event_type
    document["event_id"] = event_id
    document.setdefault("body", parsed)
    document.setdefault("headers", dict(headers or {}))
    return document
