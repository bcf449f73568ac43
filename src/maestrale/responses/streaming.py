"""Responses, plain or streamed. A streamed response was checked (planned) before its stream
opens; it runs in its own unit of work and its events (`events`) are sent as they happen, each
with an `event:` line; a failure after the stream opened ends it with `response.failed`. A
background response is streamed from its kept events, by id, from any sequence number."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import Any

import orjson
from fastapi import Request, Response

from maestrale.core.app_services import app_services
from maestrale.core.db import Database
from maestrale.core.disconnect import cancel_on_disconnect
from maestrale.core.errors import AppError
from maestrale.core.responses import json_bytes
from maestrale.core.sse import Put, produced_response, sse_event, sse_response
from maestrale.responses import shapes
from maestrale.responses.events import ResponseEvents
from maestrale.responses.service import RUNNING, Planned, ResponsesService

log = logging.getLogger("maestrale.responses")
# How often a stream by id looks for the events a background run kept since.
POLL_SECONDS = 0.1
ENDINGS = {"completed": "response.completed", "incomplete": "response.incomplete"}
TERMINAL = frozenset({*ENDINGS.values(), "response.failed"})


def frame(event: dict[str, Any]) -> bytes:
    return sse_event(event, str(event["type"]))


def failure(response: dict[str, Any], exc: BaseException) -> dict[str, Any]:
    """The failed response of a run that raised `exc` after it started."""
    if isinstance(exc, AppError):
        return shapes.failed(response, exc.status_code, exc.message)
    log.error("response %s failed", response["id"], exc_info=exc)
    return shapes.failed(response, 500, "internal server error")


async def respond(request: Request, service: ResponsesService, planned: Planned) -> Response:
    """Run a planned response: as JSON, or as a stream of response events. Either way a client
    that goes away cancels the run (its model and tool calls), and nothing is stored."""
    if not planned.body.stream:
        response = await cancel_on_disconnect(request, service.run(planned))
        return json_bytes(orjson.dumps(response))
    db: Database = app_services(request).db
    events = ResponseEvents()

    async def produce(put: Put) -> None:
        async def emit(event: dict[str, Any]) -> None:
            for out in events.on(event):
                await put(frame(out))

        for out in events.start(planned.response):
            await put(frame(out))
        try:
            async with db.transaction() as work:
                response = await service.in_work(work).run(planned, emit)
        except Exception as exc:  # the stream is open: the failure is its last event
            response = failure(planned.response, exc)
        for out in events.finish(response):
            await put(frame(out))

    return produced_response(produce)


def replay(db: Database, service: ResponsesService, response_id: str, after: int) -> Response:
    """Stream a background response's events after sequence number `after`: those kept so far,
    then the others as its run keeps them, until its last one (or the response is cancelled)."""

    async def frames() -> AsyncIterator[bytes]:
        seen = after
        while True:
            async with db.transaction() as work:
                reader = service.in_work(work)
                row = await reader.row(response_id)
                status = row.status
                events = await reader.repo.events_after(response_id, seen)
            for event in events:
                seen = event["sequence_number"]
                yield frame(event)
                if event["type"] in TERMINAL:
                    return
            if not events and status not in RUNNING:
                if status == "cancelled":
                    return
                # Ended without a last event kept (its run stopped early): its end as stored.
                kind = ENDINGS.get(status, "response.failed")
                yield frame({"type": kind, "sequence_number": seen + 1, "response": row.body})
                return
            if not events:
                await asyncio.sleep(POLL_SECONDS)

    return sse_response(frames())
