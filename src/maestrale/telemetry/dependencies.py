"""Typed access to the process's ingestion queue (`services.telemetry`)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends
from starlette.requests import HTTPConnection

from maestrale.core.app_services import app_services
from maestrale.core.errors import ServiceUnavailable
from maestrale.telemetry.queue import IngestQueue


async def get_queue(connection: HTTPConnection) -> IngestQueue:
    queue: IngestQueue | None = getattr(app_services(connection), "telemetry", None)
    if queue is None:  # a process that serves no app (never on a serving one)
        raise ServiceUnavailable("the telemetry store is not running", code="telemetry_off")
    return queue


Queue = Annotated[IngestQueue, Depends(get_queue)]
