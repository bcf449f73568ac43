"""HTTP responses of a call: JSON with the header that tells Maestrale's own overhead."""

from __future__ import annotations

import time
from typing import Any

import orjson
from fastapi import Request, Response

from maestrale.gateway.call import Call

OVERHEAD_HEADER = "x-maestrale-overhead-ms"


def overhead_ms(request: Request, call: Call[object]) -> str:
    """Time Maestrale itself spent on the request so far: everything but the engine's time."""
    started = request.scope.get("state", {}).get("started", call.started)
    return f"{(time.perf_counter() - started - call.engine_seconds) * 1000:.3f}"


def json_response(request: Request, call: Call[object], body: dict[str, Any]) -> Response:
    """`body` as JSON, with the overhead header of `call`."""
    return Response(
        orjson.dumps(body),
        media_type="application/json",
        headers={OVERHEAD_HEADER: overhead_ms(request, call)},
    )
