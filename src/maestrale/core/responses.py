"""JSON responses built from bytes: for hot routes that encode their body themselves (with
pydantic-core or orjson) instead of FastAPI's generic encoder walking every value."""

from __future__ import annotations

from fastapi import Response
from pydantic import BaseModel


def json_bytes(payload: bytes, status_code: int = 200) -> Response:
    return Response(payload, status_code=status_code, media_type="application/json")


def json_model(model: BaseModel) -> Response:
    """The model as JSON, as its schema dumps it (declare it in the route's `responses`)."""
    return json_bytes(model.__pydantic_serializer__.to_json(model))
