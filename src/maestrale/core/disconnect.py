"""Cancelling a request's work when its client goes away.

A plain (not streamed) response is written only once the handler returns, so a handler that runs
long work (model turns, tool calls) would finish it for nobody, and keep its side effects going,
after its client has disconnected. `cancel_on_disconnect` runs the work while it listens for the
ASGI `http.disconnect` message (which the server sends once the client closes the connection,
after the body was read) and cancels the work when it comes; the request then ends with
`ClientDisconnected` (499, which nobody reads), so that its unit of work is rolled back.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any, TypeVar

from fastapi import Request

from maestrale.core.errors import AppError

T = TypeVar("T")


class ClientDisconnected(AppError):
    status_code = 499
    code = "client_disconnected"


async def _disconnected(request: Request) -> None:
    """Return once the client has gone away (what a server sends after the body is read)."""
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            return


async def _cancel(task: asyncio.Future[Any]) -> None:
    """Cancel `task` and wait for it to end (its outcome is dropped)."""
    task.cancel()
    await asyncio.wait({task})
    if not task.cancelled():
        task.exception()  # retrieved: a failure while it was cancelled is not logged as lost


async def cancel_on_disconnect(request: Request, awaitable: Awaitable[T]) -> T:
    """The result of `awaitable`, which is cancelled if the client disconnects first (then
    `ClientDisconnected` is raised once it has ended). The request's body must have been read."""
    work = asyncio.ensure_future(awaitable)
    watch = asyncio.ensure_future(_disconnected(request))
    try:
        await asyncio.wait({work, watch}, return_when=asyncio.FIRST_COMPLETED)
        if watch.done() and watch.exception() is not None:  # cannot listen: just wait
            await asyncio.wait({work})
    except BaseException:  # this request was cancelled: so is its work
        await _cancel(work)
        raise
    finally:
        await _cancel(watch)
    if not work.done():
        await _cancel(work)
        raise ClientDisconnected("the client closed the connection before the response")
    return work.result()
