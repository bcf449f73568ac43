"""Tools the server runs for a conversation (connector tools; later the built-in ones): what a
model is offered beside the client's function tools, and how a call to one is run.

A `ServerToolbox` is built per request from the target's tool list in the request's unit of work
(it reads connectors, their credentials and activations), and then runs calls with no session
open (the tool runner releases it): a call is a network call to a tool server.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from maestrale.core.auth.principal import Tenant
from maestrale.core.errors import BadRequest
from maestrale.core.uow import UnitOfWork


class ToolUnavailable(BadRequest):
    """A tool the request names that this server cannot run (off, or not configured)."""

    code = "tool_unavailable"


@dataclass(frozen=True, slots=True)
class ServerTool:
    """One tool a model is offered and the server runs."""

    name: str  # the function name the model sees (unique among the request's tools)
    description: str
    parameters: dict[str, Any]  # JSON schema of the arguments
    requires_confirmation: bool = False
    # Where the tool comes from, recorded in its entries' `info` (connector id and name, the
    # tool's own name on its server).
    source: dict[str, Any] = field(default_factory=dict)

    def definition(self) -> dict[str, Any]:
        """The function tool a chat request offers for it."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }


@dataclass(slots=True)
class ToolOutcome:
    """What a server tool call gave: the text the model reads next, and the entry's details."""

    output: str  # the result's text (or the error's, when `error` is set)
    error: str | None = None  # why the call failed (tool error, timeout, unreachable server)
    info: dict[str, Any] = field(default_factory=dict)  # extra entry info (content, timing...)
    # Chunks the answer that follows carries: `tool_reference` citations (a search's sources, a
    # library's documents) and `tool_file` files the tool produced (Files API ids).
    references: list[dict[str, Any]] = field(default_factory=list)
    files: list[dict[str, Any]] = field(default_factory=list)


class ServerToolbox(Protocol):
    """The server-run tools of one request."""

    def tools(self) -> Sequence[ServerTool]:
        """The tools offered to the model, in order."""
        ...

    async def run(self, tool: ServerTool, arguments: dict[str, Any]) -> ToolOutcome:
        """Run `tool` with `arguments`. A failing, timed-out or unreachable tool server gives an
        outcome with `error` set, never an exception; cancellation propagates (and cancels the
        call on the tool server's side as far as its protocol allows)."""
        ...


class ToolboxFactory(Protocol):
    """Builds the toolbox of a target's tool list (the tools the server runs among them)."""

    def handles(self, tool_type: str) -> bool:
        """Whether tools of this `type` are run by this factory's toolboxes."""
        ...

    def seal(self, tenant: Tenant, tools: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        """`tools` as they are stored (with an agent or a conversation): the secrets they carry
        (a connector tool's `authorization`) sealed; `build` opens them."""
        ...

    async def build(
        self, work: UnitOfWork, tenant: Tenant, tools: Sequence[dict[str, Any]]
    ) -> ServerToolbox:
        """The toolbox of `tools` (the target's whole list; entries of types this factory does not
        handle are skipped), read in `work` (released before a tool server is called); raises a
        4xx AppError for a tool that names something the caller cannot use (an unknown or
        inactive connector...)."""
        ...


class EmptyToolbox:
    """No server-run tools."""

    def tools(self) -> Sequence[ServerTool]:
        return ()

    async def run(self, tool: ServerTool, arguments: dict[str, Any]) -> ToolOutcome:
        raise KeyError(tool.name)


EMPTY_TOOLBOX = EmptyToolbox()
