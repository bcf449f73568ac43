"""Bounds that let a JSON schema's grammar end within a token budget.

A grammar built from a schema keeps the output well-formed, but a small model can still write one
string, or one array, forever: SmolLM2-135M, asked for the SDK's structured-output example (a list
of steps, each an explanation and an output, then a final answer), repeats a sentence inside a
string until `max_tokens` cuts the JSON. So before the schema is converted, every string and
array that the schema leaves unbounded gets a `maxLength` / `maxItems`, the most generous pair of
`CAPS` whose longest value still fits in the budget (the request's `max_tokens`, or what is left
of the context). Bounds the schema sets itself are kept as they are, and so is everything else:
the grammar still accepts only values of the schema.

The longest value is counted in characters of compact JSON (with the one optional space the
converter allows after each value and colon); a token of generated ASCII text is at least one
character, so a value whose longest form fits is never cut. An escaped or non-ASCII character can
take more tokens than one. Parts of the schema that stay free-form (`{}`, an object without
`properties`, `additionalProperties`, a `pattern`, a recursive `$ref`) cannot be counted: they
count as nothing, and only their strings are bounded (as any other string of the schema).
Whitespace needs no bound: the converter allows at most one space between two tokens of JSON.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

__all__ = ["CAPS", "bounded_schema", "json_string_cap", "longest"]

# (longest string in characters, most items of an array), from the most generous down: the first
# pair whose longest value fits the budget is taken, the last when none does.
CAPS: tuple[tuple[int, int], ...] = (
    (512, 32),
    (256, 16),
    (128, 16),
    (128, 8),
    (64, 8),
    (64, 4),
    (32, 4),
    (32, 2),
    (16, 2),
    (16, 1),
)
_SIZED_STRING = ("maxLength", "enum", "const", "pattern", "format")
_FORMATTED = 40  # a date, time, date-time or uuid string, quoted
_PRIMITIVE = {"integer": 18, "number": 52, "boolean": 6, "null": 5}
_SCHEMA_MAPS = ("properties", "$defs", "definitions", "patternProperties", "dependentSchemas")
_SCHEMA_VALUES = ("items", "additionalProperties", "not", "contains", "if", "then", "else")
_SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")


def _capped(node: Any, string_cap: int, item_cap: int) -> Any:
    """`node` (a schema) with `maxLength` on its unbounded strings and `maxItems` on its
    unbounded arrays, everywhere a schema can nest."""
    if not isinstance(node, dict):
        return node

    def again(child: Any) -> Any:
        return _capped(child, string_cap, item_cap)

    out = dict(node)
    for key in _SCHEMA_MAPS:
        if isinstance(node.get(key), dict):
            out[key] = {name: again(child) for name, child in node[key].items()}
    for key in _SCHEMA_VALUES:
        if isinstance(node.get(key), dict):
            out[key] = again(node[key])
    for key in (*_SCHEMA_LISTS, "items"):
        if isinstance(node.get(key), list):
            out[key] = [again(child) for child in node[key]]
    kind = node.get("type")
    if isinstance(kind, list):
        # The converter reads a list of types as bare `{"type": t}` alternatives, which would
        # drop every other keyword (and the bounds): spell it as the alternatives it means.
        shared = {k: v for k, v in out.items() if k not in ("type", "$defs", "definitions")}
        kept = {k: out[k] for k in ("$defs", "definitions") if k in out}
        alternatives = [again({**shared, "type": t}) for t in kind if isinstance(t, str)]
        return {**kept, "anyOf": alternatives}
    if kind == "string" and not any(key in node for key in _SIZED_STRING):
        out["maxLength"] = max(string_cap, _count(node.get("minLength")))
    if kind == "array" and isinstance(node.get("items"), dict) and "maxItems" not in node:
        out["maxItems"] = max(item_cap, _count(node.get("minItems")))
    return out


def _count(value: Any) -> int:
    return value if isinstance(value, int) and value > 0 else 0


def _pointer(root: dict[str, Any], ref: str) -> Any:
    """The node that the local `$ref` (`#/a/b`) names in `root`, or None."""
    node: Any = root
    for part in ref[2:].split("/") if ref != "#" else ():
        part = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def longest(schema: dict[str, Any]) -> float:
    """The length in characters of the longest JSON value the grammar of `schema` accepts,
    counting free-form parts (see the module) as nothing; `math.inf` for a string or array
    without a bound."""

    def size(node: Any, seen: frozenset[str]) -> float:
        if not isinstance(node, dict):
            return 0.0  # `true` / `false` schemas: free-form or nothing
        ref = node.get("$ref")
        if isinstance(ref, str):
            if not ref.startswith("#") or ref in seen:
                return 0.0  # remote or recursive: free-form
            return size(_pointer(schema, ref), seen | {ref})
        alternatives = node.get("anyOf") or node.get("oneOf")
        if isinstance(alternatives, list):
            return max((size(a, seen) for a in alternatives), default=0.0)
        if "const" in node:
            return len(json.dumps(node["const"])) + 1.0
        if isinstance(node.get("enum"), list):
            return max((len(json.dumps(v)) + 1.0 for v in node["enum"]), default=0.0)
        kind = node.get("type")
        if isinstance(node.get("allOf"), list):
            return sum(size(part, seen) for part in node["allOf"]) + 2.0
        if isinstance(node.get("properties"), dict):
            fields = node["properties"].items()
            return 2.0 + sum(len(json.dumps(k)) + 4.0 + size(v, seen) for k, v in fields)
        if kind == "array" or "items" in node or "prefixItems" in node:
            return _array(node, lambda child: size(child, seen))
        if kind == "string":
            if "pattern" in node:
                return 0.0
            if "format" in node and "maxLength" not in node:
                return float(_FORMATTED)
            cap = node.get("maxLength")
            return cap + 3.0 if isinstance(cap, int) else math.inf
        return float(_PRIMITIVE.get(kind, 0)) if isinstance(kind, str) else 0.0

    return size(schema, frozenset())


def _array(node: dict[str, Any], size: Callable[[Any], float]) -> float:
    items = node.get("prefixItems", node.get("items"))
    if isinstance(items, list):
        return 2.0 + sum(size(item) + 2.0 for item in items)
    cap = node.get("maxItems")
    if not isinstance(cap, int):
        return math.inf
    return 2.0 + cap * (size(items) + 2.0) if cap else 3.0


def bounded_schema(schema: dict[str, Any], budget: int) -> dict[str, Any]:
    """`schema` with the most generous `CAPS` whose longest value fits in `budget` tokens (the
    tightest when none does) on the strings and arrays it leaves unbounded."""
    capped: dict[str, Any] = schema
    for string_cap, item_cap in CAPS:
        capped = _capped(schema, string_cap, item_cap)
        if longest(capped) <= budget:
            break
    return capped


def json_string_cap(budget: int) -> int:
    """The longest string of a free-form JSON answer (`json_object`) under `budget` tokens: a
    quarter of it, within the range of `CAPS`."""
    return max(CAPS[-1][0], min(CAPS[0][0], budget // 4))
