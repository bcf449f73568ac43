"""The smallest deterministic instance of a JSON schema (`response_format` `json_schema`)."""

from __future__ import annotations

import enum
import json
from typing import Any, Literal

import pydantic
import pytest

from maestrale.engines.builtin import BuiltinEngine
from maestrale.engines.builtin.json_schema import smallest_instance
from maestrale.engines.types import ChatRequest, EngineError


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        ({"type": "string"}, "echo"),
        ({"type": "integer"}, 0),
        ({"type": "number"}, 0),
        ({"type": "boolean"}, False),
        ({"type": "null"}, None),
        ({}, None),
        (True, None),
        ({"type": ["null", "integer"]}, 0),
        ({"type": ["null"]}, None),
        ({"const": {"fixed": [1]}}, {"fixed": [1]}),
        ({"type": "string", "enum": ["red", "green"]}, "red"),
        ({"enum": [3, 1, 2]}, 3),
    ],
)
def test_scalars(schema: Any, expected: Any) -> None:
    assert smallest_instance(schema) == expected


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        ({"type": "integer", "minimum": 5}, 5),
        ({"type": "integer", "minimum": 2.5}, 3),
        ({"type": "integer", "exclusiveMinimum": 5}, 6),
        ({"type": "integer", "exclusiveMinimum": 5.5}, 6),
        ({"type": "integer", "minimum": 5, "exclusiveMinimum": True}, 6),
        ({"type": "integer", "minimum": 1, "exclusiveMinimum": 3}, 4),
        ({"type": "integer", "maximum": -3}, -3),
        ({"type": "integer", "exclusiveMaximum": 0}, -1),
        ({"type": "integer", "maximum": 10}, 0),
        ({"type": "integer", "minimum": 7, "multipleOf": 5}, 10),
        ({"type": "number", "minimum": 2.5}, 2.5),
        ({"type": "number", "exclusiveMinimum": 1}, 1.5),
        ({"type": "number", "maximum": -0.25}, -0.25),
    ],
)
def test_numbers(schema: dict[str, Any], expected: float) -> None:
    value = smallest_instance(schema)
    assert value == expected
    if schema["type"] == "integer":
        assert isinstance(value, int)


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        ({"type": "string", "minLength": 3}, "echo"),
        ({"type": "string", "minLength": 10}, "echoechoec"),
        ({"type": "string", "maxLength": 2}, "ec"),
        ({"type": "string", "maxLength": 0}, ""),
        ({"type": "string", "format": "date-time"}, "1970-01-01T00:00:00Z"),
        ({"type": "string", "format": "date"}, "1970-01-01"),
        ({"type": "string", "format": "no-such-format"}, "echo"),
    ],
)
def test_strings(schema: dict[str, Any], expected: str) -> None:
    assert smallest_instance(schema) == expected


def test_object_keeps_only_required_properties_in_schema_order() -> None:
    schema = {
        "type": "object",
        "properties": {
            "zeta": {"type": "string"},
            "optional": {"type": "integer"},
            "alpha": {"type": "boolean"},
        },
        "required": ["alpha", "zeta", "extra"],
        "additionalProperties": {"type": "integer", "minimum": 9},
    }
    value = smallest_instance(schema)
    assert value == {"zeta": "echo", "alpha": False, "extra": 9}
    assert list(value) == ["zeta", "alpha", "extra"]


def test_nested_objects_and_arrays() -> None:
    schema = {
        "type": "object",
        "properties": {
            "user": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "minLength": 6},
                    "tags": {"type": "array", "items": {"type": "string"}},
                    "scores": {
                        "type": "array",
                        "minItems": 2,
                        "items": {"type": "integer", "minimum": 1},
                    },
                },
                "required": ["name", "tags", "scores"],
            },
            "note": {"type": "string"},
        },
        "required": ["user"],
    }
    assert smallest_instance(schema) == {"user": {"name": "echoec", "tags": [], "scores": [1, 1]}}


def test_arrays_with_prefix_items() -> None:
    modern = {
        "type": "array",
        "minItems": 3,
        "prefixItems": [{"const": "a"}],
        "items": {"type": "integer"},
    }
    assert smallest_instance(modern) == ["a", 0, 0]
    draft4 = {"type": "array", "minItems": 2, "items": [{"type": "boolean"}, {"enum": ["x"]}]}
    assert smallest_instance(draft4) == [False, "x"]
    untyped = {"items": {"type": "string"}, "minItems": 1}
    assert smallest_instance(untyped) == ["echo"]


def test_refs_are_resolved() -> None:
    schema = {
        "type": "object",
        "properties": {
            "point": {"$ref": "#/$defs/Point"},
            "colour": {"$ref": "#/definitions/Colour"},
        },
        "required": ["point", "colour"],
        "$defs": {
            "Point": {
                "type": "object",
                "properties": {"x": {"$ref": "#/$defs/Coord"}, "y": {"$ref": "#/$defs/Coord"}},
                "required": ["x", "y"],
            },
            "Coord": {"type": "number", "minimum": -1},
        },
        "definitions": {"Colour": {"enum": ["blue", "red"]}},
    }
    assert smallest_instance(schema) == {"point": {"x": -1, "y": -1}, "colour": "blue"}


def test_any_of_and_one_of_take_the_first_branch() -> None:
    assert smallest_instance({"anyOf": [{"type": "integer", "minimum": 4}, {"type": "null"}]}) == 4
    assert smallest_instance({"oneOf": [{"type": "string"}, {"type": "integer"}]}) == "echo"


def test_all_of_branches_are_merged() -> None:
    schema = {
        "allOf": [
            {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
            {"properties": {"b": {"type": "string"}}, "required": ["b"]},
        ]
    }
    assert smallest_instance(schema) == {"a": 0, "b": "echo"}


def test_recursive_optional_structure_is_fine() -> None:
    schema = {
        "$ref": "#/$defs/Node",
        "$defs": {
            "Node": {
                "type": "object",
                "properties": {
                    "value": {"type": "integer"},
                    "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
                },
                "required": ["value", "children"],
            }
        },
    }
    assert smallest_instance(schema) == {"value": 0, "children": []}


@pytest.mark.parametrize(
    "schema",
    [
        {"$ref": "#/$defs/Missing"},
        {"$ref": "https://example.com/schema.json"},
        {
            "$ref": "#/$defs/Loop",
            "$defs": {
                "Loop": {
                    "type": "object",
                    "properties": {"next": {"$ref": "#/$defs/Loop"}},
                    "required": ["next"],
                }
            },
        },
    ],
)
def test_unusable_schemas_are_client_errors(schema: dict[str, Any]) -> None:
    with pytest.raises(EngineError) as info:
        smallest_instance(schema)
    assert info.value.status == 400


class Size(enum.Enum):
    SMALL = "small"
    LARGE = "large"


class Address(pydantic.BaseModel):
    street: str = pydantic.Field(min_length=8)
    number: int = pydantic.Field(gt=0)


class Order(pydantic.BaseModel):
    id: int = pydantic.Field(ge=100)
    size: Size
    kind: Literal["pizza", "pasta"]
    address: Address
    extra: list[Address] = pydantic.Field(min_length=1)
    price: float = pydantic.Field(gt=2)
    note: str | None
    optional: str = "default"


def test_instance_of_a_pydantic_schema_validates() -> None:
    value = smallest_instance(Order.model_json_schema())
    order = Order.model_validate(value)
    assert order.id == 100
    assert order.size is Size.SMALL
    assert order.kind == "pizza"
    assert order.address == Address(street="echoecho", number=1)
    assert len(order.extra) == 1
    assert order.price == 2.5
    assert "optional" not in value


async def test_chat_with_json_schema_format() -> None:
    schema = {
        "type": "object",
        "properties": {
            "answer": {"type": "string"},
            "confidence": {"type": "number", "minimum": 0.5},
        },
        "required": ["answer", "confidence"],
    }
    request = ChatRequest(
        model="maestrale-echo",
        messages=[{"role": "user", "content": "what is it?"}],
        response_format={
            "type": "json_schema",
            "json_schema": {"name": "answer", "schema": schema},
        },
    )
    result = await BuiltinEngine().chat(request)
    assert result.choices[0].finish_reason == "stop"
    assert json.loads(result.choices[0].message["content"]) == {"answer": "echo", "confidence": 0.5}


async def test_json_schema_format_without_a_schema_falls_back_to_json_object() -> None:
    request = ChatRequest(
        model="m",
        messages=[{"role": "user", "content": "hi"}],
        response_format={"type": "json_schema", "json_schema": {"name": "x"}},
    )
    result = await BuiltinEngine().chat(request)
    assert json.loads(result.choices[0].message["content"]) == {"echo": "hi"}
