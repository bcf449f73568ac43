"""The mistralai 3.x operations this server does not serve, by path prefix: a call to one is a
501 that names them, not a 404 or 405 that reads like a typo in the caller's path (`python
bench/sdk_diff.py 2.8.0 3.7.0 --served` lists each operation). Only a request that no route
takes is answered so: the routes served under a prefix answer as ever."""

from __future__ import annotations

from collections.abc import Callable

from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from maestrale.core.errors import error_body

# Deployments here are self-hosted: their workers register them, and what reads them is served.
WORKFLOW_DEPLOYMENTS = "managed workflow deployments (create, update, delete, start, stop, restart)"

PLANNED: dict[str, str] = {
    "/v1/workflows/deployments": WORKFLOW_DEPLOYMENTS,
}


def renderer(group: str) -> Callable[[Exception], JSONResponse | None]:
    """The error renderer of a planned prefix: no route there is a 501 naming `group`; any other
    error (a route built later, say) keeps the default rendering."""

    def render(exc: Exception) -> JSONResponse | None:
        if isinstance(exc, HTTPException) and exc.status_code in (404, 405):
            message = f"not served yet: {group} is planned but not built in this server"
            return JSONResponse(
                error_body(message, "not_implemented_error", "not_implemented"), 501
            )
        return None

    return render
