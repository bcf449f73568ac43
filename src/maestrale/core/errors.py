"""The error model: domain errors with a status and a stable code, and their JSON rendering.

Every error body is `{"object": "error", "message", "type", "code", "param"}` except validation
errors, which keep FastAPI's `{"detail": [{"loc", "msg", "type"}]}` shape that the SDKs parse.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from sqlalchemy.exc import DBAPIError, DisconnectionError, PendingRollbackError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from starlette.exceptions import HTTPException as StarletteHTTPException

from maestrale.core.db import is_unavailable, sqlstate_of

log = logging.getLogger("maestrale.errors")


class AppError(Exception):
    """Base of every domain error. Services raise these, never HTTPException."""

    status_code: int = 400
    code: str = "invalid_request"
    type: str = "invalid_request_error"

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        param: str | None = None,
        status_code: int | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        if status_code is not None:
            self.status_code = status_code
        self.param = param
        self.headers = headers

    def body(self) -> dict[str, Any]:
        return error_body(self.message, self.type, self.code, self.param)


class BadRequest(AppError):
    status_code = 400


class Unauthorized(AppError):
    status_code = 401
    code = "unauthorized"
    type = "authentication_error"


class Forbidden(AppError):
    status_code = 403
    code = "forbidden"
    type = "permission_error"


class NotFound(AppError):
    status_code = 404
    code = "not_found"
    type = "not_found_error"


class Conflict(AppError):
    status_code = 409
    code = "conflict"
    type = "conflict_error"


class PayloadTooLarge(AppError):
    status_code = 413
    code = "payload_too_large"


class UnsupportedMediaType(AppError):
    status_code = 415
    code = "unsupported_media_type"


def retry_after(seconds: float) -> dict[str, str]:
    """The `Retry-After` header of a refusal that can be retried in `seconds` (whole, ≥ 1)."""
    return {"Retry-After": str(max(1, math.ceil(seconds)))}


class TooManyRequests(AppError):
    status_code = 429
    code = "rate_limited"
    type = "rate_limit_error"


class UpstreamError(AppError):
    status_code = 502
    code = "upstream_error"
    type = "api_error"


class ServiceUnavailable(AppError):
    status_code = 503
    code = "service_unavailable"
    type = "api_error"


class UpstreamTimeout(AppError):
    status_code = 504
    code = "upstream_timeout"
    type = "api_error"


def error_body(message: str, type_: str, code: str, param: str | None = None) -> dict[str, Any]:
    return {"object": "error", "message": message, "type": type_, "code": code, "param": param}


class ErrorOut(BaseModel):
    """The body of every error but validation errors (`error_body`)."""

    object: Literal["error"]
    message: str
    type: str
    code: str
    param: str | None


class ValidationIssue(BaseModel):
    loc: list[str | int]
    msg: str
    type: str


class ValidationErrorOut(BaseModel):
    """The body of a 422: FastAPI's shape, which the SDKs parse."""

    detail: list[ValidationIssue]


_DESCRIPTIONS = {
    400: "Bad request",
    401: "Missing, invalid or revoked key",
    403: "Forbidden",
    404: "Not found",
    409: "Conflict",
    413: "Request body too large",
    415: "Unsupported media type",
    416: "Range not satisfiable",
    422: "Validation error",
    429: "Rate or spend limit reached",
    502: "Upstream (model server) error",
    503: "Service unavailable",
    504: "Upstream timeout",
}

# The failures of a call to a model (an engine, an upstream): a guardrail blocks it (403), the
# model is unknown (404), a limit is reached (429), the upstream fails, is down or too slow.
MODEL_ERRORS = (403, 404, 429, 502, 503, 504)


def error_responses(
    statuses: Iterable[int], model: type[BaseModel] = ErrorOut
) -> dict[int | str, dict[str, Any]]:
    """The `responses=` of a route's error statuses, declared in `/openapi.json` (a 422 of the
    common shape is FastAPI's validation error)."""
    return {
        status: {
            "model": ValidationErrorOut if status == 422 and model is ErrorOut else model,
            "description": _DESCRIPTIONS.get(status, "Error"),
        }
        for status in statuses
    }


_STATUS_CODES = {
    400: ("invalid_request", "invalid_request_error"),
    401: ("unauthorized", "authentication_error"),
    403: ("forbidden", "permission_error"),
    404: ("not_found", "not_found_error"),
    405: ("method_not_allowed", "invalid_request_error"),
    406: ("not_acceptable", "invalid_request_error"),
    413: ("payload_too_large", "invalid_request_error"),
    415: ("unsupported_media_type", "invalid_request_error"),
}


async def _app_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, AppError)
    return JSONResponse(exc.body(), status_code=exc.status_code, headers=exc.headers)


# A group with its own error body (observability) renders the HTTP errors raised outside its
# routes (no route, method not allowed) under its path prefix; `None` falls back to the common one.
HttpErrorRenderer = Callable[[Exception], JSONResponse | None]


def _scoped(request: Request, exc: Exception) -> JSONResponse | None:
    """`exc` in the body of the group of the request's path, if it has its own: the renderer of
    the longest prefix that renders it (one may leave an error to the group around it)."""
    renderers: Mapping[str, HttpErrorRenderer] = getattr(request.app.state, "error_renderers", {})
    path = request.url.path
    for prefix in sorted((p for p in renderers if path.startswith(p)), key=len, reverse=True):
        rendered = renderers[prefix](exc)
        if rendered is not None:
            return rendered
    return None


async def _http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    scoped = _scoped(request, exc)
    if scoped is not None:
        return scoped
    code, type_ = _STATUS_CODES.get(exc.status_code, ("http_error", "invalid_request_error"))
    if exc.status_code == 404 and exc.detail == "Not Found":
        message = f"no route for {request.method} {request.url.path}"
        code = "route_not_found"
    elif exc.status_code == 405:
        message = f"method {request.method} is not allowed on {request.url.path}"
    else:
        message = str(exc.detail)
    headers = dict(exc.headers) if exc.headers else None
    return JSONResponse(error_body(message, type_, code), exc.status_code, headers=headers)


async def _validation_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    # Keep FastAPI's shape (the SDKs parse it) but drop `input` echoes of large bodies and any
    # non-JSON-serialisable ctx values.
    detail = [
        {
            "loc": list(err.get("loc", ())),
            "msg": str(err.get("msg", "")),
            "type": str(err.get("type", "value_error")),
        }
        for err in exc.errors()
    ]
    return JSONResponse({"detail": detail}, status_code=422)


INTERNAL_ERROR = error_body("internal server error", "api_error", "internal_error")


# Seconds a client is told to wait (`Retry-After`) when the database cannot be reached, unless
# the app's settings say otherwise (`unavailable_retry_after`).
DEFAULT_RETRY_AFTER = 5


def database_unavailable(request: Request) -> JSONResponse:
    """The 503 of a request the database could not serve (refused, cut, timed out, the pool
    exhausted), with `Retry-After`, in the body of the request's group."""
    settings = getattr(request.app.state, "settings", None)
    seconds = getattr(settings, "unavailable_retry_after", DEFAULT_RETRY_AFTER)
    retry = {"Retry-After": str(seconds)}
    error = ServiceUnavailable(
        "the database is unavailable; retry shortly", code="database_unavailable", headers=retry
    )
    response = _scoped(request, error) or JSONResponse(error.body(), 503, headers=retry)
    response.headers["Retry-After"] = retry["Retry-After"]
    return response


async def _database_error(request: Request, exc: Exception) -> JSONResponse:
    """A value the database refuses (SQLSTATE class 22: too long, bad encoding, out of range) is
    the caller's error; a database that cannot be reached is a 503; anything else is a bug."""
    if isinstance(exc, DBAPIError):
        sqlstate = sqlstate_of(exc)
        if sqlstate is not None and sqlstate.startswith("22"):
            refused = BadRequest(
                "a value of the request cannot be stored (too long, out of range or invalid text)",
                code="invalid_value",
            )
            return _scoped(request, refused) or JSONResponse(refused.body(), status_code=400)
    if is_unavailable(exc):
        log.error(
            "database unavailable on %s %s: %s: %s",
            request.method,
            request.url.path,
            type(exc).__name__,
            _reason(exc),
        )
        return database_unavailable(request)
    raise exc


def _reason(exc: BaseException) -> str:
    """The driver's own words, without the statement and its parameters."""
    cause = getattr(exc, "orig", None) or exc
    return str(cause).split("\n", 1)[0][:200]


# What the database layer raises when it cannot serve: a driver error (wrapped by SQLAlchemy),
# a connection that failed or was cut (`DatabaseUnavailable`, a `DisconnectionError`), the pool
# exhausted, a session used again after its connection was lost.
DATABASE_ERRORS: tuple[type[Exception], ...] = (
    DBAPIError,
    DisconnectionError,
    PoolTimeout,
    PendingRollbackError,
)


def install_error_handlers(
    app: FastAPI, scoped: Mapping[str, HttpErrorRenderer] | None = None
) -> None:
    """The error handlers; `scoped` maps path prefixes to their group's renderer."""
    app.state.error_renderers = dict(scoped or {})
    app.add_exception_handler(AppError, _app_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    for error in DATABASE_ERRORS:
        app.add_exception_handler(error, _database_error)
    # Unhandled exceptions are turned into a JSON 500 by the request middleware, which also
    # logs them with the request id.
