"""The newest mistralai 3.x SDK driving an app served on a real socket of the test's event loop
(for SDK-driven wire-shape tests that seed through the app's own database)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Protocol

from fastapi import FastAPI

from tests.support.app_fixtures import API_KEY
from tests.support.live import on_socket
from tests.support.sdks import NEWEST_3, SdkProcess


class SdkCall(Protocol):
    async def __call__(self, operation: str, **kwargs: Any) -> Any: ...


@asynccontextmanager
async def sdk3_on_socket(app: FastAPI, key: str = API_KEY) -> AsyncIterator[SdkCall]:
    """`app` served on a socket with the SDK pointed at it; yields `ok(operation, **kwargs)`,
    which calls `operation` (`beta.observability.traces.search`…) in a thread, so the server
    keeps serving on this loop, and returns its answer (failing unless the call succeeded)."""
    async with on_socket(app) as port:
        sdk = await asyncio.to_thread(SdkProcess, NEWEST_3, f"http://127.0.0.1:{port}", key)
        try:

            async def ok(operation: str, **kwargs: Any) -> Any:
                return (await asyncio.to_thread(sdk.call, operation, **kwargs)).ok()

            yield ok
        finally:
            await asyncio.to_thread(sdk.close)
