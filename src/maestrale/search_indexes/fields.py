"""The fields of an index's schema (the SDK's `ManagedIndexFields`): the 16 types and their
defaults, the rules a schema follows, what an update may change (only add), and the check of a
document's or a chunk's values against them, as per-field errors in the SDK's
`DocumentFieldErrorResponse` shape (`{"location", "type", "message"}`)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from maestrale.core.validation import FieldInvalid
from maestrale.search_indexes.errors import InvalidSchema
from maestrale.search_indexes.schemas import FieldDefinitionIn, ManagedIndexFieldsIn

# The SDK's defaults of `indexed`, by type: full-text, keywords and vectors are indexed.
INDEXED_BY_DEFAULT = frozenset({"text", "keyword", "dense_vector"})
DENSE_VECTOR = "dense_vector"
KINDS = ("document_fields", "chunk_fields")
# Keys a document or a chunk has of its own: no field of the schema may take them.
RESERVED = {
    "document_fields": frozenset({"id", "source_id", "content", "chunks", "metadata"}),
    "chunk_fields": frozenset(
        {
            "id",
            "source_id",
            "content",
            "locator",
            "start_offset",
            "end_offset",
            "chunk_type",
            "parent_ref",
            "metadata",
        }
    ),
}
MAX_STRING = 65_536  # characters of a text value
MAX_KEYWORD = 1_024
MAX_TIMESTAMP = 64
MAX_ARRAY = 1_024
INT32 = 2**31
INT64 = 2**63

Location = list[str | int]
FieldError = dict[str, Any]


def field_error(location: Location, type_: str, message: str) -> FieldError:
    return {"location": location, "type": type_, "message": message}


def definition(spec: FieldDefinitionIn) -> dict[str, Any]:
    """A field's definition as stored and answered: every flag given its default."""
    out: dict[str, Any] = {
        "type": spec.type,
        "indexed": spec.type in INDEXED_BY_DEFAULT if spec.indexed is None else spec.indexed,
        "required": spec.required,
        "system": spec.system,
    }
    if spec.default is not None:
        out["default"] = spec.default
    return out


def validated_schema(given: ManagedIndexFieldsIn | None, embedding: str) -> dict[str, Any]:
    """The schema to store (400 `invalid_schema` when it breaks a rule): no field named like a
    key of its own, dense vectors only among chunk fields and at most one (an index of
    `custom` embeddings needs it: its chunks carry their vectors there), defaults of the
    field's type."""
    schema: dict[str, Any] = {}
    for kind in KINDS:
        specs = (getattr(given, kind) if given is not None else None) or {}
        out: dict[str, Any] = {}
        for name, spec in specs.items():
            where = f"schema.{kind}.{name}"
            if name in RESERVED[kind]:
                raise InvalidSchema(f"{where}: {name!r} is a key of its own", param=where)
            if spec.type == DENSE_VECTOR and kind == "document_fields":
                raise InvalidSchema(f"{where}: dense vectors are chunk fields", param=where)
            if spec.default is not None:
                if spec.type == DENSE_VECTOR:
                    raise InvalidSchema(f"{where}: a dense vector has no default", param=where)
                _, problems = check_value(spec.type, spec.default, [name], 0)
                if problems:
                    raise InvalidSchema(
                        f"{where}: the default is not a {spec.type}: {problems[0]['message']}",
                        param=where,
                    )
            out[name] = definition(spec)
        schema[kind] = out
    vectors = vector_fields(schema)
    if len(vectors) > 1:
        raise InvalidSchema("schema.chunk_fields: at most one dense_vector field", param="schema")
    if embedding == "custom" and not vectors:
        raise InvalidSchema(
            "custom embeddings need a dense_vector chunk field: the chunks' vectors",
            param="schema.chunk_fields",
        )
    return schema


def vector_fields(schema: dict[str, Any]) -> list[str]:
    """The dense_vector chunk fields of a schema (none or one)."""
    chunk_fields: dict[str, Any] = schema.get("chunk_fields") or {}
    return [name for name, spec in chunk_fields.items() if spec["type"] == DENSE_VECTOR]


def check_additive(old: dict[str, Any], new: dict[str, Any]) -> None:
    """422 unless `new` only adds to `old`: every field kept with its type, and a field that
    becomes required (new, or optional before) has a default for the documents already in."""
    for kind in KINDS:
        before: dict[str, Any] = old.get(kind) or {}
        after: dict[str, Any] = new.get(kind) or {}
        for name, spec in before.items():
            loc: Location = ["body", "schema", kind, name]
            if name not in after:
                raise FieldInvalid(loc, f"the field {name!r} cannot be removed", "not_additive")
            if after[name]["type"] != spec["type"]:
                raise FieldInvalid(
                    loc,
                    f"the field {name!r} is a {spec['type']}: its type cannot change",
                    "not_additive",
                )
        for name, spec in after.items():
            was_required = name in before and before[name]["required"]
            if spec["required"] and not was_required and "default" not in spec:
                raise FieldInvalid(
                    ["body", "schema", kind, name],
                    f"the field {name!r} becomes required: give it a default for the "
                    "documents already indexed",
                    "not_additive",
                )


@dataclass(slots=True)
class Checked:
    """A document's or a chunk's field values as stored, the vector it carries (if any), and
    what is wrong with them."""

    values: dict[str, Any] = field(default_factory=dict)
    vector: list[float] | None = None
    errors: list[FieldError] = field(default_factory=list)


def check_fields(
    definitions: dict[str, Any],
    given: dict[str, Any],
    location: Location,
    dimension: int,
) -> Checked:
    """`given` (the keys of a document or a chunk that are not its own) against the schema's
    `definitions`: unknown fields, missing required ones (a default fills them), values of
    the wrong type."""
    out = Checked()
    for name in given:
        if name not in definitions:
            out.errors.append(
                field_error([*location, name], "extra_forbidden", f"no field {name!r} in schema")
            )
    for name, spec in definitions.items():
        where = [*location, name]
        value = given.get(name)
        if value is None:
            if "default" in spec:
                out.values[name] = spec["default"]
            elif spec["required"]:
                out.errors.append(field_error(where, "missing", f"{name!r} is required"))
            continue
        clean, problems = check_value(spec["type"], value, where, dimension)
        out.errors.extend(problems)
        if problems:
            continue
        if spec["type"] == DENSE_VECTOR:
            out.vector = clean
        else:
            out.values[name] = clean
    return out


def check_value(
    type_: str, value: Any, where: Location, dimension: int
) -> tuple[Any, list[FieldError]]:
    """A value as stored, or the errors that make it no value of `type_`."""
    if type_.endswith("[]"):
        if not isinstance(value, list):
            return None, [field_error(where, "list_type", f"expected a list of {type_[:-2]}")]
        if len(value) > MAX_ARRAY:
            return None, [field_error(where, "too_long", f"at most {MAX_ARRAY} values")]
        items: list[Any] = []
        errors: list[FieldError] = []
        for i, item in enumerate(value):
            clean, problems = _scalar(type_[:-2], item, [*where, i])
            items.append(clean)
            errors.extend(problems)
        return items, errors
    if type_ == DENSE_VECTOR:
        return _vector(value, where, dimension)
    if type_ == "json":
        return value, []
    return _scalar(type_, value, where)


def _vector(value: Any, where: Location, dimension: int) -> tuple[Any, list[FieldError]]:
    if not isinstance(value, list) or not all(_is_number(v) for v in value):
        return None, [field_error(where, "vector_type", "expected a list of numbers")]
    if len(value) != dimension:
        message = f"{len(value)} values, the index's dimension is {dimension}"
        return None, [field_error(where, "vector_dimension", message)]
    if not any(value):
        return None, [field_error(where, "vector_zero", "a zero vector has no direction")]
    return [float(v) for v in value], []


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _scalar(type_: str, value: Any, where: Location) -> tuple[Any, list[FieldError]]:
    def bad(kind: str, message: str) -> tuple[Any, list[FieldError]]:
        return None, [field_error(where, kind, message)]

    if type_ in ("text", "keyword"):
        limit = MAX_STRING if type_ == "text" else MAX_KEYWORD
        if not isinstance(value, str):
            return bad("string_type", f"expected a {type_} (a string)")
        if len(value) > limit:
            return bad("too_long", f"at most {limit} characters")
        return value, []
    if type_ in ("int", "long"):
        bound = INT32 if type_ == "int" else INT64
        if not isinstance(value, int) or isinstance(value, bool):
            return bad("int_type", f"expected an integer ({type_})")
        if not -bound <= value < bound:
            return bad("int_range", f"out of the range of a {type_}")
        return value, []
    if type_ == "float":
        if not _is_number(value):
            return bad("float_type", "expected a finite number")
        return float(value), []
    if type_ == "bool":
        if not isinstance(value, bool):
            return bad("bool_type", "expected true or false")
        return value, []
    if type_ == "timestamp":
        stamp = _timestamp(value)
        if stamp is None:
            return bad("timestamp_parsing", "expected an ISO 8601 date and time")
        return stamp, []
    return bad("type", f"no {type_} values")


def _timestamp(value: Any) -> str | None:
    """An ISO 8601 date-time as a UTC ISO string (a naive one is taken as UTC)."""
    if not isinstance(value, str) or len(value) > MAX_TIMESTAMP:
        return None
    try:
        stamp = datetime.fromisoformat(value)
    except ValueError:
        return None
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=UTC)
    return stamp.astimezone(UTC).isoformat()
