"""The request's unit of work: one per request, committed by the route class after the handler
returned (before the response is sent), then its `on_commit` actions run; rolled back on any
error. The components that call a model, a tool or the network release it first, given its
`release` (the gateway, the tool runner, the connector runtime, the URL fetchers).
Before the handler, the route refuses integers past 64 bits in its URL and a JSON body that no
column could store (`core.validation`)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Coroutine, Iterable
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request, Response, params
from fastapi.routing import APIRoute
from pydantic import BaseModel

from maestrale.core.app_services import app_services
from maestrale.core.db import Database
from maestrale.core.errors import ErrorOut, error_responses
from maestrale.core.uow import UnitOfWork
from maestrale.core.validation import check_int_parameters, check_json_body, int_parameters


async def request_work(request: Request) -> AsyncIterator[UnitOfWork]:
    db: Database = app_services(request).db
    work = UnitOfWork(db.sessionmaker)
    request.state.work = work
    try:
        yield work
    finally:
        await work.close()


# The one way a handler (or a dependency) reaches the request's transaction: `work.session`
# to read and write, `work.on_commit` for what must follow the commit.
Work = Annotated[UnitOfWork, Depends(request_work)]


_BODY_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


def common_errors(path: str, methods: Iterable[str] | None) -> tuple[int, ...]:
    """The errors every route of its shape can answer, whatever its handler does: a URL with
    NUL or a parameter out of range (400), no valid key (401), an id that names nothing (404,
    for a path with parameters), a body past its limit (413)."""
    statuses = [400, 401]
    if "{" in path:
        statuses.append(404)
    if _BODY_METHODS.intersection(methods or ()):
        statuses.append(413)
    return tuple(statuses)


class TransactionalRoute(APIRoute):
    # The body of the route's errors, as declared in `/openapi.json`.
    error_model: type[BaseModel] = ErrorOut

    def __init__(self, path: str, endpoint: Callable[..., Any], **kwargs: Any) -> None:
        # Declared so that `/openapi.json` names every status a route answers; the route's
        # own `responses` (and its router's) come last and win.
        declared = error_responses(common_errors(path, kwargs.get("methods")), self.error_model)
        kwargs["responses"] = {**declared, **(kwargs.get("responses") or {})}
        super().__init__(path, endpoint, **kwargs)

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()
        takes_json = self.body_field is not None and not isinstance(
            self.body_field.field_info, params.Form
        )
        # Checked before the handler: what no column can store never reaches a service.
        integers = int_parameters(self.dependant)

        async def run(request: Request) -> Response:
            try:
                if integers:
                    check_int_parameters(request, integers)
                if takes_json:
                    await check_json_body(request)
                response = await handler(request)
            except BaseException:
                work: UnitOfWork | None = getattr(request.state, "work", None)
                if work is not None:
                    await work.rollback()
                raise
            work = getattr(request.state, "work", None)
            if work is not None:
                await work.commit()
            return response

        return run


class RenderedRoute(TransactionalRoute):
    """A route of a group with an error body of its own: what `render` returns for an error
    (None: the app's handlers render it) is the response."""

    @staticmethod
    def render(exc: Exception) -> Response | None:
        return None

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def run(request: Request) -> Response:
            try:
                return await handler(request)
            except Exception as exc:
                response = self.render(exc)
                if response is None:
                    raise
                return response

        return run


def group_router(
    render: Callable[[Exception], Response | None],
    error_model: type[BaseModel],
    responses: dict[int | str, dict[str, Any]],
    **kwargs: object,
) -> APIRouter:
    """The router of a group whose errors `render` shapes, declared with `error_model`."""
    route_class = type(
        f"{error_model.__name__}Route",
        (RenderedRoute,),
        {"render": staticmethod(render), "error_model": error_model},
    )
    return APIRouter(route_class=route_class, responses=responses, **kwargs)  # type: ignore[arg-type]


def domain_router(**kwargs: object) -> APIRouter:
    """The router every domain uses: transactional routes."""
    return APIRouter(route_class=TransactionalRoute, **kwargs)  # type: ignore[arg-type]
