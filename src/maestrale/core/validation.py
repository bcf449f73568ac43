"""Validation failures found outside FastAPI's own request parsing (form fields of a streamed
upload, the body of a batch line), answered in FastAPI's 422 shape, which the SDKs parse; and the
limits every JSON document a client sends must keep to, whatever field holds it."""

from __future__ import annotations

import math
import types
from typing import Any, Union, get_args, get_origin

import orjson
from fastapi import Request
from fastapi.dependencies.models import Dependant
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, ValidationError

from maestrale.core.errors import AppError

# JSON documents are stored (events, agents, conversations, records) and serialised by orjson,
# which refuses integers beyond 64 bits, lone surrogates and nesting past ~250 levels. A stored
# document nests the client's one a few levels deeper (an event holds the request's tools, a
# tool its parameters), so the client's document gets a depth well below orjson's limit.
MAX_JSON_DEPTH = 64
INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1

Location = tuple[str | int, ...]


class JsonProblem(ValueError):
    """Why a JSON document cannot be accepted, and where (a path of keys and indexes)."""

    def __init__(self, loc: Location, message: str) -> None:
        super().__init__(message)
        self.loc = loc
        self.message = message


def check_json(value: Any) -> None:
    """Raise `JsonProblem` when `value` (parsed JSON) nests deeper than `MAX_JSON_DEPTH`, holds
    an integer outside the signed 64-bit range, a number that is not finite (NaN, Infinity) or a
    string (value or key) that is not valid Unicode (a lone surrogate, from a `\\ud800` escape).

    Every request body goes through this: the common case is one walk over the containers
    (strings are left to orjson, which checks them in C), and the walk that says where the
    problem is runs only when there is one.
    """
    if _fits(value, 0):
        try:
            orjson.dumps(value)
            return
        except TypeError:
            pass
    _locate(value, (), 0)
    raise JsonProblem((), "the document cannot be stored as JSON")  # a problem _locate misses


def _fits(value: Any, depth: int) -> bool:
    """Depth, integer range and finite numbers (not strings): the fast path of `check_json`."""
    kind = type(value)
    if kind is dict:
        items: Any = value.values()
    elif kind is list:
        items = value
    elif kind is int:
        return bool(INT64_MIN <= value <= INT64_MAX)
    elif kind is float:
        return math.isfinite(value)
    else:
        return True
    if depth >= MAX_JSON_DEPTH:
        return False
    for item in items:
        kind = type(item)
        if kind is str:
            continue
        if kind is int:
            if not INT64_MIN <= item <= INT64_MAX:
                return False
        elif not _fits(item, depth + 1):
            return False
    return True


def _valid_text(text: str) -> bool:
    if text.isascii():
        return True
    try:
        text.encode()  # UTF-8 has no lone surrogates
    except UnicodeEncodeError:
        return False
    return True


def _escaped(text: str) -> str:
    """`text` with each lone surrogate written as its JSON escape, so that it can be encoded."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _locate(value: Any, loc: Location, depth: int) -> None:
    """Raise the first problem of `value` with where it is."""
    kind = type(value)
    if kind is str:
        if not _valid_text(value):
            raise JsonProblem(loc, "string is not valid Unicode (lone surrogate)")
    elif kind is dict or kind is list:
        if depth >= MAX_JSON_DEPTH:
            raise JsonProblem(loc, f"JSON nests deeper than {MAX_JSON_DEPTH} levels")
        pairs = value.items() if kind is dict else enumerate(value)
        for key, item in pairs:
            if type(key) is str and not _valid_text(key):
                # The location goes into the 422's JSON body, which cannot hold the key itself:
                # it is named by its escapes (`\\udc00`), as the client wrote it.
                message = "key is not valid Unicode (lone surrogate)"
                raise JsonProblem((*loc, _escaped(key)), message)
            _locate(item, (*loc, key), depth + 1)
    elif kind is int:
        if not INT64_MIN <= value <= INT64_MAX:
            raise JsonProblem(loc, "integer is outside the signed 64-bit range")
    elif kind is float and not math.isfinite(value):
        raise JsonProblem(loc, "number is not finite")


def request_json_error(problem: JsonProblem) -> RequestValidationError:
    """The 422 of a request body that breaks the JSON limits, as FastAPI words its own."""
    return RequestValidationError(
        [{"loc": ("body", *problem.loc), "msg": problem.message, "type": "json_invalid"}]
    )


# -- the request checks of every route (`core.routing.TransactionalRoute`) -----------------


def _is_json(content_type: str | None) -> bool:
    media = (content_type or "").partition(";")[0].strip().lower()
    return media == "application/json" or (
        media.startswith("application/") and media.endswith("+json")
    )


async def check_json_body(request: Request) -> None:
    """Refuse (422) a JSON body that no column could store (`check_json`): every route that
    keeps any part of its body (metadata, tools, records, completion arguments) and
    every event recorded from it is safe by construction. The parsed body is cached on the
    request, so FastAPI's own parsing does not parse it again."""
    if not _is_json(request.headers.get("content-type")):
        return
    await request.body()  # a failed read propagates as it would from FastAPI's own read
    try:
        body = await request.json()
    except (ValueError, RecursionError):
        return  # not JSON: FastAPI's own parsing answers it
    try:
        check_json(body)
    except JsonProblem as exc:
        raise request_json_error(exc) from exc


def _holds_int(annotation: Any) -> bool:
    if annotation is int:
        return True
    if get_origin(annotation) in (Union, types.UnionType, list):
        return any(_holds_int(arg) for arg in get_args(annotation))
    return False


def int_parameters(dependant: Dependant) -> tuple[tuple[str, str], ...]:
    """("query" | "path", name) of every integer parameter of the route and its dependencies."""
    found: list[tuple[str, str]] = []
    stack = [dependant]
    while stack:
        current = stack.pop()
        stack.extend(current.dependencies)
        for where, fields in (("query", current.query_params), ("path", current.path_params)):
            found += [(where, f.alias) for f in fields if _holds_int(f.field_info.annotation)]
    return tuple(dict.fromkeys(found))


def _beyond_int64(raw: str) -> bool:
    digits = raw.strip().lstrip("+-").lstrip("0")
    if not digits.isdigit():
        return False  # not an integer: the parameter's own validation answers
    if len(digits) > 19:
        return True  # without parsing it: int() refuses more than 4300 digits
    try:
        return not INT64_MIN <= int(raw.strip()) <= INT64_MAX
    except ValueError:
        return False


def check_int_parameters(request: Request, names: tuple[tuple[str, str], ...]) -> None:
    """Integers in the URL are signed 64-bit, as in JSON bodies (`check_json`): a page number
    or a limit past that range reaches no database as an overflow (a 500)."""
    for where, name in names:
        if where == "query":
            values = request.query_params.getlist(name)
        else:
            value = request.path_params.get(name)
            values = [value] if isinstance(value, str) else []
        for value in values:
            if _beyond_int64(value):
                message = "integer is outside the signed 64-bit range"
                raise RequestValidationError(
                    [{"loc": (where, name), "msg": message, "type": "int_too_large"}]
                )


class RequestInvalid(AppError):
    """422 with `{"detail": [{"loc", "msg", "type"}]}`, `loc` rooted at `where`."""

    status_code = 422
    code = "validation_error"

    def __init__(self, error: ValidationError, where: str = "body") -> None:
        self.detail = [
            {"loc": [where, *err.get("loc", ())], "msg": str(err["msg"]), "type": err["type"]}
            for err in error.errors(include_url=False, include_input=False)
        ]
        first = self.detail[0] if self.detail else {"loc": [where], "msg": "invalid value"}
        field = ".".join(str(part) for part in first["loc"][1:]) or where
        super().__init__(f"{field}: {first['msg']}")

    def body(self) -> dict[str, Any]:
        return {"detail": self.detail}


class FieldInvalid(AppError):
    """422 in FastAPI's shape for one field (`loc` rooted at `body`, `query`...): a rule that a
    request model cannot check alone, or a document past the JSON limits."""

    status_code = 422
    code = "validation_error"

    def __init__(self, loc: list[str | int], message: str, type_: str = "value_error") -> None:
        self.detail = [{"loc": loc, "msg": message, "type": type_}]
        field = ".".join(str(part) for part in loc[1:]) or str(loc[0])
        super().__init__(f"{field}: {message}")

    def body(self) -> dict[str, Any]:
        return {"detail": self.detail}


class JsonInvalid(FieldInvalid):
    """422 in FastAPI's shape for a document that breaks the JSON limits (see `check_json`)."""

    def __init__(self, problem: JsonProblem, where: str = "body") -> None:
        super().__init__([where, *problem.loc], problem.message, "json_invalid")


def parse_body(model: type[BaseModel], body: dict[str, Any]) -> Any:
    """`body` as `model`; a validation failure is the 422 the live endpoint gives."""
    try:
        check_json(body)
    except JsonProblem as exc:
        raise JsonInvalid(exc) from exc
    try:
        return model.model_validate(body)
    except ValidationError as exc:
        raise RequestInvalid(exc) from exc
