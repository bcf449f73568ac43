"""What a built-in tool is: its entry in a tool list (`{"type": "web_search", ...}`) becomes a
function the model is offered, and a call to it runs on the server with no database session open
(a tool opens its own short sessions, before and after its slow work, never across it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from sqlalchemy.ext.asyncio import AsyncSession

from maestrale.conversations.server_tools import ServerTool, ToolOutcome
from maestrale.core.auth.principal import Tenant

if TYPE_CHECKING:
    from maestrale.config import Settings
    from maestrale.core.blobs import BlobStore
    from maestrale.core.db import Database
    from maestrale.engines.registry import EngineRegistry


class ToolServices(Protocol):
    """What built-in tools read of the process's services: the settings, the database (their
    own short transactions), blob storage (the files they make) and the engines (embeddings)."""

    @property
    def settings(self) -> Settings: ...

    @property
    def db(self) -> Database: ...

    @property
    def blobs(self) -> BlobStore: ...

    @property
    def engines(self) -> EngineRegistry: ...


@dataclass(frozen=True, slots=True)
class ToolContext:
    """Who calls a built-in tool, with what configuration, and the services it reads."""

    tenant: Tenant
    services: ToolServices
    # The tool's entry in the target's tool list, as stored (`library_ids`, `tool_configuration`).
    entry: dict[str, Any] = field(default_factory=dict)


class BuiltinTool(Protocol):
    """One built-in tool type."""

    type: str  # the tool list's `type`, and the name of its tool.execution entries

    def unavailable(self, settings: Settings) -> str | None:
        """Why this server cannot run the tool (a missing backend or setting, named so that an
        operator knows what to configure), or None when it can. Checked when a request offers
        the tool: a reason gives the request a 400 `tool_unavailable`."""
        ...

    def offer(self, entry: dict[str, Any]) -> ServerTool:
        """The function the model is offered for the tool list's `entry` (its name is the
        tool's `type`)."""
        ...

    async def run(self, context: ToolContext, arguments: dict[str, Any]) -> ToolOutcome:
        """Run a call. A failure the model should read (bad arguments, a backend down, a limit
        hit) is an outcome with `error` set, never an exception; cancellation propagates."""
        ...


@runtime_checkable
class CheckedTool(Protocol):
    """A built-in tool whose entry names things the caller must be able to use (a library)."""

    async def check(self, session: AsyncSession, tenant: Tenant, entry: dict[str, Any]) -> None:
        """Raise the 4xx of an entry naming what the caller cannot use (with the request's
        session, before any call runs)."""
        ...


@runtime_checkable
class PreparedTool(Protocol):
    """A built-in tool that finds out whether it can run off the event loop (probing a
    sandbox): `build` awaits this instead of calling `unavailable`."""

    async def prepare(self, settings: Settings) -> str | None:
        """As `unavailable`, with blocking probes run in a thread (and remembered)."""
        ...


__all__ = [
    "BuiltinTool",
    "CheckedTool",
    "PreparedTool",
    "ServerTool",
    "ToolContext",
    "ToolOutcome",
    "ToolServices",
]
