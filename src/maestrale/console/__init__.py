"""The web console at /console: HTML shells and static ES modules (no build step), a
cookie session with CSRF protection, and a same-origin proxy to the public API."""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from starlette.staticfiles import StaticFiles

from maestrale.console.proxy import PREFIX, ConsoleProxy
from maestrale.console.router import router
from maestrale.console.security import SecurityHeaders

STATIC_DIR = Path(__file__).parent / "static"


def install_console(app: FastAPI) -> None:
    """Adds the console's pages, its API proxy and its static files to `app`."""
    app.include_router(router)
    app.mount(PREFIX, ConsoleProxy(), name="console-api")
    # Revalidated on every load (ETag): a new release's modules are never mixed with old ones.
    static = StaticFiles(directory=STATIC_DIR)
    app.mount(
        "/console/static", SecurityHeaders(static, cache_control="no-cache"), name="console-static"
    )
