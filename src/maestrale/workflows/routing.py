"""The workflows group's routes: its errors rendered in the platform's body (`workflows.errors`)
whatever raised them (authentication, the domain, an unknown path under the group)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from starlette.exceptions import HTTPException as StarletteHTTPException

from maestrale.core.errors import AppError
from maestrale.core.routing import group_router
from maestrale.workflows.errors import NOT_FOUND, WorkflowError, WorkflowErrorOut

_DEFAULT_CODES = {400: "WF_1000", 401: "WF_1001", 403: "WF_1003", 404: NOT_FOUND, 409: "WF_1009"}


def _body(message: str, code: str, **extra: Any) -> dict[str, Any]:
    return {"detail": message, "code": code, **extra}


def render(exc: Exception) -> JSONResponse | None:
    """The group's rendering of an error, or None for what the app handlers render (422s, and
    5xx that are not the group's own)."""
    if isinstance(exc, WorkflowError):
        body = _body(exc.message, exc.wf_code, **exc.extra)
        return JSONResponse(body, status_code=exc.status_code, headers=exc.headers)
    if isinstance(exc, AppError):
        code = _DEFAULT_CODES.get(exc.status_code, exc.code)
        return JSONResponse(
            _body(exc.message, code), status_code=exc.status_code, headers=exc.headers
        )
    if isinstance(exc, StarletteHTTPException) and 400 <= exc.status_code < 500:
        code = _DEFAULT_CODES.get(exc.status_code, f"WF_{exc.status_code}")
        headers = dict(exc.headers) if exc.headers else None
        message = str(exc.detail)
        if exc.status_code == 404 and message == "Not Found":
            message = "no such route in the workflows API"
        return JSONResponse(_body(message, code), exc.status_code, headers=headers)
    return None


PREFIX = "/v1/workflows"

ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    status: {"model": WorkflowErrorOut, "description": description}
    for status, description in (
        (400, "Bad request"),
        (401, "Unauthorized"),
        (404, "Not found"),
        (409, "Conflict"),
        (502, "Temporal failed"),
        (503, "Temporal unavailable"),
    )
}


def workflows_router(**kwargs: object) -> APIRouter:
    return group_router(render, WorkflowErrorOut, ERROR_RESPONSES, **kwargs)


def _specificity(route: APIRoute) -> tuple[tuple[bool, ...], str, tuple[str, ...]]:
    """At the first segment where two paths differ, a fixed one sorts before a parameter; the
    path and the methods break ties, so the order depends on the routes alone."""
    parameters = tuple("{" in segment for segment in route.path.split("/"))
    return parameters, route.path, tuple(sorted(route.methods or ()))


def assemble(*routers: APIRouter) -> APIRouter:
    """One router of the routes of `routers`, most specific first, in the same order whatever
    the order of `routers`. Starlette takes the first route that matches, and a parameter
    matches any segment: `/workflows/{workflow_identifier}` would otherwise take
    `/workflows/runs` or `/workflows/archive` if it came first. Two paths of different depths
    never match the same URL (a `:path` parameter, which could, is refused), so segments decide
    alone. The routes are the group's own, not included routers: FastAPI matches an included
    router's routes in place, where no order across them would hold."""
    routes: list[APIRoute] = []
    for sub in routers:
        for route in sub.routes:
            if not isinstance(route, APIRoute) or ":path}" in route.path:
                raise TypeError(f"{route!r}: only plain routes can be ordered by their segments")
            routes.append(route)
    routes.sort(key=_specificity)
    return APIRouter(routes=[*routes])
