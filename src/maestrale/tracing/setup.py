"""Turning tracing on: for a serving app (`install_tracing`) and for the database and job runs of
a process (`trace_process`). Nothing is imported from OpenTelemetry unless it is configured."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from maestrale.tracing.spans import active

if TYPE_CHECKING:
    from fastapi import FastAPI
    from sqlalchemy.ext.asyncio import AsyncEngine

    from maestrale.config import Settings
    from maestrale.tracing.provider import Tracing

log = logging.getLogger("maestrale.tracing")

_TRACES_PATH = "/v1/traces"
_STANDARD_ENDPOINTS = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")


def traces_endpoint(settings: Settings) -> tuple[bool, str | None]:
    """Whether tracing is on, and the URL traces are posted to: `otlp_endpoint` (a base URL,
    `/v1/traces` added, or the full URL), else None for the exporter to read the standard
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT / OTEL_EXPORTER_OTLP_ENDPOINT. Off when none is set, or
    when OTEL_SDK_DISABLED is true."""
    if os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False, None
    endpoint = (settings.otlp_endpoint or "").strip()
    if endpoint:
        base = endpoint.rstrip("/")
        return True, base if base.endswith(_TRACES_PATH) else base + _TRACES_PATH
    return any(os.environ.get(name, "").strip() for name in _STANDARD_ENDPOINTS), None


def open_tracing(settings: Settings) -> Tracing | None:
    """The process's tracing when it is configured and installed, else None."""
    on, endpoint = traces_endpoint(settings)
    if not on:
        return None
    try:
        from maestrale.tracing.provider import Tracing
    except ImportError as exc:
        log.error(
            "an OTLP endpoint is configured but tracing is not installed (%s): traces are "
            "off; install the `otel` extra",
            exc,
        )
        return None
    return Tracing(endpoint)


def install_tracing(app: FastAPI, settings: Settings) -> None:
    """Trace the app's requests (the outermost middleware), when tracing is configured. Off,
    nothing is added: requests cost what they cost without it."""
    tracing = open_tracing(settings)
    if tracing is None:
        return
    from maestrale.tracing.asgi import TracingMiddleware

    app.add_middleware(TracingMiddleware, tracing=tracing)
    app.state.tracing = tracing  # the telemetry store adds its processor of the server's spans


async def _nothing() -> None:
    return None


def trace_process(settings: Settings, engine: AsyncEngine) -> Callable[[], Awaitable[None]]:
    """Trace the statements of `engine` under traced requests and jobs, and, in a process that
    serves no traced app (`maestrale worker`), turn tracing on for what runs in this context
    (the job worker). Returns what turns it off again (awaited when the process's services
    close: pending spans are exported)."""
    served = active.get()  # the app's, set by its middleware around the lifespan
    tracing = served or open_tracing(settings)
    if tracing is None:
        return _nothing
    from maestrale.tracing.database import instrument

    instrument(engine, tracing)
    if served is not None:  # the app's middleware exports what is pending at shutdown
        return _nothing
    token = active.set(tracing)

    async def close() -> None:
        active.reset(token)
        await asyncio.to_thread(tracing.shutdown)

    return close
