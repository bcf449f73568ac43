"""The request's unit of work: one session per request, committed by the route class after the
handler returned (before the response is sent), rolled back on any error."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request, Response
from fastapi.routing import APIRoute
from sqlalchemy.ext.asyncio import AsyncSession

from maestrale.core.db import Database


async def request_session(request: Request) -> AsyncIterator[AsyncSession]:
    db: Database = request.app.state.db
    async with db.sessionmaker() as session:
        request.state.db_session = session
        yield session


DbSession = Annotated[AsyncSession, Depends(request_session)]


class TransactionalRoute(APIRoute):
    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def run(request: Request) -> Response:
            try:
                response = await handler(request)
            except BaseException:
                session: AsyncSession | None = getattr(request.state, "db_session", None)
                if session is not None:
                    await session.rollback()
                raise
            session = getattr(request.state, "db_session", None)
            if session is not None and session.in_transaction():
                await session.commit()
            return response

        return run


def domain_router(**kwargs: object) -> APIRouter:
    """The router every domain uses: transactional routes."""
    return APIRouter(route_class=TransactionalRoute, **kwargs)  # type: ignore[arg-type]
