"""The trigger depth of the work under way, passed on to the server's own outbound calls.

Work a trigger started (a conversation, a workflow) runs at its delivery's depth + 1, and every
HTTP call the server makes on its behalf (connectors' MCP servers, tools' upstreams, fetched
URLs) carries `X-Maestrale-Trigger-Depth: <depth>`. When such a call ends up at one of this
server's webhooks, the receiver reads the header and cuts the loop at the configured maximum
depth. Outside triggered work the variable is unset and no header is sent.
"""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping
from contextlib import contextmanager
from contextvars import ContextVar

HEADER = "X-Maestrale-Trigger-Depth"

_depth: ContextVar[int | None] = ContextVar("maestrale_trigger_depth", default=None)


def current() -> int | None:
    """The depth of the work under way; None outside triggered work."""
    return _depth.get()


@contextmanager
def running_at(depth: int) -> Iterator[None]:
    """Run the block as work at `depth` (its outbound calls carry it)."""
    token = _depth.set(depth)
    try:
        yield
    finally:
        _depth.reset(token)


def add_header(headers: MutableMapping[str, str]) -> None:
    """Add the depth header to an outbound call's `headers` in place (nothing when unset)."""
    depth = _depth.get()
    if depth is not None:
        headers[HEADER] = str(depth)
