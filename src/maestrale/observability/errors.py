"""The observability group's error body: every 4xx, 422 included, is
`{"detail": {"message", "error_code"}}` with a code of the reference's ObservabilityErrorCode.

The shape is scoped to this group: errors raised while handling one of its routes
(authentication, validation, domain errors) are rendered by its route class, and the HTTP errors
raised before any route (no route, method not allowed) under its path prefix by the app's handler
(`install_error_handlers(scoped=...)`), so every other group keeps the common error shape.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from starlette.exceptions import HTTPException as StarletteHTTPException

from maestrale.core.errors import AppError
from maestrale.core.routing import group_router

_DEFAULT_CODES = {
    400: "VALIDATION_ERROR",
    401: "AUTH_UNAUTHORIZED",
    403: "AUTH_FORBIDDEN",
    404: "SEARCH_NOT_FOUND",
    422: "VALIDATION_ERROR",
}


class ObservabilityErrorDetail(BaseModel):
    message: str
    error_code: str  # an ObservabilityErrorCode


class ObservabilityErrorData(BaseModel):
    """The body of every 4xx of the group (the reference's ObservabilityErrorData)."""

    detail: ObservabilityErrorDetail


# Declared on every route of the group (422 included: FastAPI would declare its
# HTTPValidationError there); 408 is a search past its time budget.
ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    status: {"model": ObservabilityErrorData, "description": description}
    for status, description in (
        (400, "Bad request"),
        (401, "Unauthorized"),
        (404, "Not found"),
        (408, "Search past its time budget"),
        (409, "Conflict"),
        (422, "Validation error"),
    )
}


class ObservabilityError(AppError):
    """A domain error of the group, with its ObservabilityErrorCode."""

    def __init__(self, message: str, error_code: str, *, status_code: int = 400) -> None:
        super().__init__(message, status_code=status_code)
        self.error_code = error_code


def bad_search(message: str) -> ObservabilityError:
    return ObservabilityError(message, "SEARCH_BAD_REQUEST")


def observability_body(message: str, error_code: str) -> dict[str, Any]:
    return {"detail": {"message": message, "error_code": error_code}}


def _validation_message(exc: RequestValidationError) -> str:
    parts = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err.get("loc", ()))
        parts.append(f"{loc}: {err.get('msg', 'invalid')}")
    return "; ".join(parts) or "invalid request"


def render(exc: Exception) -> JSONResponse | None:
    """The group's rendering of a 4xx, or None for anything else (left to the app handlers)."""
    if isinstance(exc, ObservabilityError):
        body = observability_body(exc.message, exc.error_code)
        return JSONResponse(body, status_code=exc.status_code, headers=exc.headers)
    if isinstance(exc, AppError) and 400 <= exc.status_code < 500:
        code = _DEFAULT_CODES.get(exc.status_code, "UNKNOWN_ERROR")
        body = observability_body(exc.message, code)
        return JSONResponse(body, status_code=exc.status_code, headers=exc.headers)
    if isinstance(exc, RequestValidationError):
        return JSONResponse(
            observability_body(_validation_message(exc), "VALIDATION_ERROR"), status_code=422
        )
    if isinstance(exc, StarletteHTTPException) and 400 <= exc.status_code < 500:
        code = _DEFAULT_CODES.get(exc.status_code, "UNKNOWN_ERROR")
        headers = dict(exc.headers) if exc.headers else None
        message = str(exc.detail)
        if exc.status_code == 404 and message == "Not Found":
            message, code = "no such route in the observability API", "UNKNOWN_ERROR"
        return JSONResponse(observability_body(message, code), exc.status_code, headers=headers)
    return None


PREFIX = "/v1/observability/"


def observability_router(**kwargs: object) -> APIRouter:
    return group_router(render, ObservabilityErrorData, ERROR_RESPONSES, **kwargs)
