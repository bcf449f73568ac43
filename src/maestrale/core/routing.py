"""The request's unit of work: one per request, committed by the route class after the handler
returned (before the response is sent), then its `on_commit` actions run; rolled back on any
error. A handler that calls a model, a tool or the network releases it first (`release()`).
Before the handler, the route refuses integers past 64 bits in its URL and a JSON body that no
column could store (`core.validation`)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request, Response, params
from fastapi.routing import APIRoute
from sqlalchemy.ext.asyncio import AsyncSession

from maestrale.core.uow import UnitOfWork
from maestrale.core.validation import check_int_parameters, check_json_body, int_parameters
from maestrale.dependencies import app_services


async def request_work(request: Request) -> AsyncIterator[UnitOfWork]:
    work = UnitOfWork(app_services(request).db.sessionmaker)
    request.state.work = work
    try:
        yield work
    finally:
        await work.close()


async def request_session(work: Annotated[UnitOfWork, Depends(request_work)]) -> AsyncSession:
    return work.session


Work = Annotated[UnitOfWork, Depends(request_work)]
DbSession = Annotated[AsyncSession, Depends(request_session)]


class TransactionalRoute(APIRoute):
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


def domain_router(**kwargs: object) -> APIRouter:
    """The router every domain uses: transactional routes."""
    return APIRouter(route_class=TransactionalRoute, **kwargs)  # type: ignore[arg-type]
