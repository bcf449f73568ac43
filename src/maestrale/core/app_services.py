"""The services a process keeps on its app. The composition root (`maestrale.services`) builds
them and the lifespan hangs them on `app.state`; each layer reads the few it owns through its own
typed dependency (`engines.dependencies`, `gateway.dependencies`, a domain's `dependencies`), so
that nothing below the root names the root's `Services` type."""

from __future__ import annotations

from typing import Any

from starlette.requests import HTTPConnection


def app_services(connection: HTTPConnection) -> Any:
    """The services of the app serving this request (or WebSocket): read one attribute, into a
    variable of its type."""
    return connection.app.state.services
