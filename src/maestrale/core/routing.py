"""The request's unit of work: one per request, committed by the route class after the handler
returned (before the response is sent), then its `on_commit` actions run; rolled back on any
error. A handler that calls a model, a tool or the network releases it first (`release()`)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request, Response
from fastapi.routing import APIRoute
from sqlalchemy.ext.asyncio import AsyncSession

from maestrale.core.uow import UnitOfWork
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

        async def run(request: Request) -> Response:
            try:
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
