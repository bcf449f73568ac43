"""The smallest deterministic instance of a JSON schema, for `response_format` `json_schema`.

Rules, in order of precedence for one (sub)schema:
- `$ref` (a local JSON pointer such as `#/$defs/X` or `#/definitions/X`) is resolved first;
  `allOf` branches are merged into one schema (properties united, `required` lists added up).
- `const` → that value; `enum` → its first value.
- `anyOf` / `oneOf` → the first branch.
- `type` lists → the first non-null type (`null` only if it is the only one). Without `type`,
  the schema is an object if it has `properties`/`required`, an array if it has `items` or
  `prefixItems`, else `null`.
- object → only the required properties: those in `properties` in schema order, then required
  names without a property schema (filled from `additionalProperties` when it is a schema).
- integer → the smallest integer ≥ `minimum` and > `exclusiveMinimum` (draft-4 boolean
  `exclusiveMinimum` supported), rounded up to `multipleOf`; without a lower bound 0, or the
  largest value allowed by a negative maximum. number → `minimum`, or `exclusiveMinimum + 0.5`,
  likewise 0 by default. These are "simple and predictable", not always the true infimum.
- string → "echo", repeated and cut to respect `minLength`/`maxLength`; known formats give a
  fixed valid value (date-time "1970-01-01T00:00:00Z", date "1970-01-01", ...). `pattern` is
  not honoured.
- boolean → false; null → null; array → `minItems` items (default 0) from `prefixItems` then
  `items`. `uniqueItems` is not honoured.
"""

from __future__ import annotations

import math
from typing import Any

from maestrale.engines.types import EngineError

_MAX_DEPTH = 64

_FORMATS: dict[str, str] = {
    "date-time": "1970-01-01T00:00:00Z",
    "date": "1970-01-01",
    "time": "00:00:00Z",
    "duration": "P0D",
    "email": "echo@example.com",
    "hostname": "example.com",
    "ipv4": "127.0.0.1",
    "ipv6": "::1",
    "uri": "https://example.com/echo",
    "url": "https://example.com/echo",
    "uuid": "00000000-0000-0000-0000-000000000000",
}


def smallest_instance(schema: Any) -> Any:
    """Build the smallest deterministic value that `schema` accepts (see the module docstring).

    Raises `EngineError(400)` for an unresolvable `$ref` or a schema that only admits infinitely
    deep values (a required property that recursively requires itself).
    """
    return _Builder(schema).build(schema, 0)


def _invalid(message: str) -> EngineError:
    return EngineError(400, message, code="invalid_request")


class _Builder:
    """Walks one schema; holds the root so that `$ref` pointers can be resolved."""

    def __init__(self, root: Any) -> None:
        self.root = root

    def resolve(self, ref: str) -> Any:
        if not ref.startswith("#"):
            raise _invalid(f"json_schema: only local $ref are supported, got {ref!r}")
        node: Any = self.root
        parts = ref[1:].split("/")[1:] if ref != "#" else []
        for part in parts:
            key = part.replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict) and key in node:
                node = node[key]
            elif isinstance(node, list) and key.isdigit() and int(key) < len(node):
                node = node[int(key)]
            else:
                raise _invalid(f"json_schema: cannot resolve $ref {ref!r}")
        return node

    def normalise(self, schema: Any, depth: int) -> dict[str, Any] | None:
        """Resolve `$ref` and merge `allOf`; None for a boolean (`true`/`false`) schema."""
        if depth > _MAX_DEPTH:
            raise _invalid("json_schema: schema too deep (recursive required properties?)")
        if not isinstance(schema, dict):
            return None
        node: dict[str, Any] = schema
        if isinstance(ref := node.get("$ref"), str):
            target = self.normalise(self.resolve(ref), depth + 1)
            siblings = {k: v for k, v in node.items() if k != "$ref"}
            node = _merge(target or {}, siblings)
        if isinstance(branches := node.get("allOf"), list):
            merged = {k: v for k, v in node.items() if k != "allOf"}
            for branch in branches:
                merged = _merge(merged, self.normalise(branch, depth + 1) or {})
            node = merged
        return node

    def build(self, raw: Any, depth: int) -> Any:
        schema = self.normalise(raw, depth)
        if schema is None:
            return None
        if "const" in schema:
            return schema["const"]
        if isinstance(enum := schema.get("enum"), list) and enum:
            return enum[0]
        for key in ("anyOf", "oneOf"):
            if isinstance(branches := schema.get(key), list) and branches:
                return self.build(branches[0], depth + 1)
        kind = _type_of(schema)
        if kind == "object":
            return self.build_object(schema, depth)
        if kind == "array":
            return self.build_array(schema, depth)
        if kind in ("integer", "number"):
            return _number(schema, integer=kind == "integer")
        if kind == "string":
            return _string(schema)
        if kind == "boolean":
            return False
        return None

    def build_object(self, schema: dict[str, Any], depth: int) -> dict[str, Any]:
        properties = schema.get("properties")
        properties = properties if isinstance(properties, dict) else {}
        required = schema.get("required")
        required_names = (
            [r for r in required if isinstance(r, str)] if isinstance(required, list) else []
        )
        result: dict[str, Any] = {}
        for name, sub in properties.items():
            if name in required_names:
                result[name] = self.build(sub, depth + 1)
        extra = schema.get("additionalProperties")
        for name in required_names:
            if name not in result:
                result[name] = self.build(extra, depth + 1) if isinstance(extra, dict) else None
        return result

    def build_array(self, schema: dict[str, Any], depth: int) -> list[Any]:
        count = schema.get("minItems", 0)
        count = count if isinstance(count, int) and count > 0 else 0
        items = schema.get("items")
        prefix = schema.get("prefixItems")
        # Draft-4 tuple validation spells prefixItems as a list under `items`.
        if isinstance(items, list):
            prefix, items = items, schema.get("additionalItems")
        prefix = prefix if isinstance(prefix, list) else []
        return [
            self.build(prefix[i] if i < len(prefix) else items, depth + 1) for i in range(count)
        ]


def _merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in extra.items():
        if key == "properties" and isinstance(value, dict):
            merged["properties"] = {**(merged.get("properties") or {}), **value}
        elif key == "required" and isinstance(value, list):
            old = merged.get("required") or []
            merged["required"] = [*old, *(r for r in value if r not in old)]
        else:
            merged[key] = value
    return merged


def _type_of(schema: dict[str, Any]) -> str:
    kind = schema.get("type")
    if isinstance(kind, list):
        non_null = [k for k in kind if k != "null"]
        kind = non_null[0] if non_null else "null"
    if isinstance(kind, str):
        return kind
    if "properties" in schema or "required" in schema:
        return "object"
    if "items" in schema or "prefixItems" in schema:
        return "array"
    return "null"


def _num(value: Any) -> float | None:
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


def _number(schema: dict[str, Any], *, integer: bool) -> int | float:
    minimum = _num(schema.get("minimum"))
    maximum = _num(schema.get("maximum"))
    ex_min = schema.get("exclusiveMinimum")
    ex_max = schema.get("exclusiveMaximum")
    # Draft 4 spells exclusive bounds as booleans qualifying minimum / maximum.
    if ex_min is True and minimum is not None:
        ex_min, minimum = minimum, None
    if ex_max is True and maximum is not None:
        ex_max, maximum = maximum, None
    ex_min, ex_max = _num(ex_min), _num(ex_max)
    value: float
    if minimum is not None or ex_min is not None:
        lows = [math.ceil(minimum) if integer else minimum] if minimum is not None else []
        if ex_min is not None:
            lows.append(math.floor(ex_min) + 1 if integer else ex_min + 0.5)
        value = max(lows)
    elif maximum is not None and maximum < 0:
        value = math.floor(maximum) if integer else maximum
    elif ex_max is not None and ex_max <= 0:
        value = math.ceil(ex_max) - 1 if integer else ex_max - 0.5
    else:
        value = 0
    multiple = _num(schema.get("multipleOf"))
    if multiple is not None and multiple > 0 and value % multiple != 0:
        value = math.ceil(value / multiple) * multiple
    return math.ceil(value) if integer else value


def _string(schema: dict[str, Any]) -> str:
    fmt = schema.get("format")
    if isinstance(fmt, str) and fmt in _FORMATS:
        return _FORMATS[fmt]
    min_length = schema.get("minLength")
    max_length = schema.get("maxLength")
    text = "echo"
    if isinstance(min_length, int) and min_length > len(text):
        text = ("echo" * (min_length // 4 + 1))[:min_length]
    if isinstance(max_length, int) and 0 <= max_length < len(text):
        text = text[:max_length]
    return text
