"""What answers a conversation request (`Target`): a model with its configuration, on behalf of an
agent or not, with its tools (those the server runs in its toolbox), handoffs and guardrails; and
how a request's target is found (`Targets`): an agent's version, a conversation's model or agent,
a start's, a restart's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from maestrale.agents.service import AgentService
from maestrale.conversations.schemas import ConversationRestart, ConversationStart
from maestrale.conversations.server_tools import (
    EMPTY_TOOLBOX,
    ServerToolbox,
    ToolboxFactory,
    ToolUnavailable,
)
from maestrale.conversations.tables import Conversation
from maestrale.core.auth.principal import Tenant
from maestrale.core.errors import BadRequest
from maestrale.core.uow import UnitOfWork
from maestrale.engines.registry import EngineRegistry
from maestrale.guardrails.schemas import stored
from maestrale.registries.lookup import RegistryLookup
from maestrale.registries.references import effective_instructions, prompt_variables, stored_refs

# The function name a model calls to hand the conversation over to an agent (then its id).
HANDOFF_PREFIX = "handoff_to_"


@dataclass
class Target:
    """What answers: a model with its configuration, on behalf of an agent or not."""

    model: str
    instructions: str | None = None
    tools: list[dict[str, Any]] = field(default_factory=list)
    completion_args: dict[str, Any] = field(default_factory=dict)
    agent_id: str | None = None
    agent_name: str = ""
    agent_version: int | None = None
    handoffs: list[str] = field(default_factory=list)
    guardrails: list[dict[str, Any]] = field(default_factory=list)  # checked on a request's input
    # The tools of `tools` the server runs (connectors'), built by `Targets.equip`.
    toolbox: ServerToolbox = EMPTY_TOOLBOX
    # The prompt and skills references a new conversation keeps (a model's; an agent's prompt
    # variables), the conversation's prompt variables (they fill the prompt of any agent it
    # runs on), and which prompt and skill versions `instructions` was made of (its events'
    # extra fields).
    refs: dict[str, Any] | None = None
    variables: dict[str, Any] | None = None
    record: dict[str, Any] = field(default_factory=dict)

    def with_guardrails(self, more: list[dict[str, Any]] | None) -> Target:
        """This target with `more` guardrails (a conversation's own, after its agent's)."""
        return replace(self, guardrails=[*self.guardrails, *(more or [])])

    def check_tools(self, handles: Callable[[str], bool] | None = None) -> None:
        """Refuse tools this server cannot run: any but function tools (run by the client) and
        the types `handles` says the server runs."""
        for tool in self.tools:
            kind = tool.get("type", "function")
            if kind != "function" and not (handles is not None and handles(str(kind))):
                others = " and the tools this server runs" if handles is not None else ""
                raise ToolUnavailable(
                    f"tool type {kind!r} cannot run on this server: only function tools (run by "
                    f"the client){others} are available",
                    param="tools",
                )

    def offered_tools(self) -> list[dict[str, Any]]:
        """The function tools, then the tools the server runs, then the handoffs."""
        offered = [
            {"type": "function", "function": t["function"]}
            for t in self.tools
            if t.get("type", "function") == "function"
        ]
        offered.extend(tool.definition() for tool in self.toolbox.tools())
        for agent_id in self.handoffs:
            offered.append(
                {
                    "type": "function",
                    "function": {
                        "name": HANDOFF_PREFIX + agent_id,
                        "description": f"Hand the conversation over to agent {agent_id}.",
                        "parameters": {"type": "object", "properties": {}},
                    },
                }
            )
        return offered


class Targets:
    """Finds the targets of one caller's requests, reading agents in its unit of work, and equips
    them with the toolbox of the tools the server runs."""

    def __init__(
        self,
        work: UnitOfWork,
        tenant: Tenant,
        engines: EngineRegistry,
        toolboxes: ToolboxFactory | None,
    ) -> None:
        self.work = work
        self.tenant = tenant
        self.agents = AgentService(work.session, tenant, engines)
        self.registries = RegistryLookup(work.session, tenant)
        # Builds the toolboxes of the tools the server runs (None: it runs none).
        self.toolboxes = toolboxes

    async def of_agent(
        self, agent_id: str, version: str | int | None, variables: dict[str, Any] | None = None
    ) -> Target:
        """An agent's version (`version`: a number, an alias, or None for the current one), its
        instructions led by its prompt (rendered with its own variables, overridden by
        `variables`: a conversation's) and followed by its skills, both resolved now."""
        agent, row = await self.agents.agent_version(agent_id, version)
        instructions, record = await effective_instructions(
            self.registries, row.instructions, row.registry_refs, variables
        )
        return Target(
            model=row.model,
            instructions=instructions,
            tools=list(row.tools or []),
            completion_args=dict(row.completion_args or {}),
            agent_id=agent.id,
            agent_name=row.name,
            agent_version=row.version,
            handoffs=list(row.handoffs or []),
            guardrails=list(row.guardrails or []),
            variables=variables,
            record=record,
        )

    async def of_conversation(self, row: Conversation) -> Target:
        """What a stored conversation runs on, with its own guardrails after its agent's; its
        prompt and skills resolved now (a version moved by its alias runs from now on)."""
        refs = row.registry_refs
        variables = prompt_variables(refs)
        if row.agent_id is not None:
            target = await self.of_agent(row.agent_id, row.agent_version, variables)
            return target.with_guardrails(row.guardrails)
        assert row.model is not None
        instructions, record = await effective_instructions(self.registries, row.instructions, refs)
        return Target(
            model=row.model,
            instructions=instructions,
            tools=list(row.tools or []),
            completion_args=dict(row.completion_args or {}),
            guardrails=list(row.guardrails or []),
            variables=variables,
            record=record,
        )

    async def of_start(self, body: ConversationStart) -> Target:
        """The model or agent a start names (exactly one of them). A model target takes the
        request's completion arguments as its own; an agent's keeps its agent's."""
        if (body.agent_id is None) == (body.model is None):
            raise BadRequest(
                "give exactly one of `agent_id` and `model`",
                code="invalid_target",
                param="agent_id",
            )
        if body.agent_id is not None:
            if body.instructions is not None or body.tools is not None:
                raise BadRequest(
                    "`instructions` and `tools` belong to the agent: update the agent instead",
                    code="invalid_target",
                    param="instructions",
                )
            if body.skills is not None or (body.prompt is not None and body.prompt.id):
                raise BadRequest(
                    "the prompt and skills belong to the agent: give only `prompt.variables` "
                    "(they fill its prompt), or update the agent",
                    code="invalid_target",
                    param="prompt" if body.skills is None else "skills",
                )
            variables = body.prompt.variables if body.prompt is not None else None
            target = await self.of_agent(body.agent_id, body.agent_version, variables)
            target.refs = {"prompt": {"variables": variables}} if variables else None
            return target.with_guardrails(stored(body.guardrails))
        assert body.model is not None
        await self.agents.check_model(body.model)
        if body.prompt is not None and not body.prompt.id:
            raise BadRequest(
                "`prompt` names a stored prompt: give its `id`",
                code="invalid_target",
                param="prompt.id",
            )
        refs = stored_refs(body.prompt, body.skills)
        instructions, record = await effective_instructions(
            self.registries, body.instructions, refs
        )
        return Target(
            model=body.model,
            instructions=instructions,
            tools=self._stored_tools([t.stored() for t in body.tools or []]),
            completion_args=body.completion_args.stored() if body.completion_args else {},
            guardrails=stored(body.guardrails) or [],
            refs=refs,
            variables=prompt_variables(refs),
            record=record,
        )

    async def of_restart(self, source: Conversation, body: ConversationRestart) -> Target:
        """The model or agent a restart runs on, with the guardrails of the new conversation
        (the request's, else the source's) after its agent's."""
        if body.agent_version is not None and source.agent_id is None:
            raise BadRequest(
                "`agent_version` applies to agent conversations only", param="agent_version"
            )
        own = stored(body.guardrails) if body.guardrails is not None else source.guardrails
        if source.agent_id is not None:
            version = body.agent_version if body.agent_version is not None else None
            variables = prompt_variables(source.registry_refs)
            target = await self.of_agent(
                source.agent_id, version or source.agent_version, variables
            )
            return target.with_guardrails(own)
        target = await self.of_conversation(source)
        target.guardrails = list(own or [])
        return target

    async def equip(self, target: Target) -> None:
        """Check the target's tools (400 `tool_unavailable` for a type this server cannot run)
        and build the toolbox of those the server runs, reading what they name with the
        request's session (their calls run with none open: the tool runner releases it)."""
        factory = self.toolboxes
        handles = factory.handles if factory is not None else None
        target.check_tools(handles)
        if factory is not None and any(
            t.get("type", "function") != "function" for t in target.tools
        ):
            target.toolbox = await factory.build(self.work, self.tenant, target.tools)

    def _stored_tools(self, tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """A tool list as stored: the secrets its server-run tools carry sealed."""
        return self.toolboxes.seal(self.tenant, tools) if self.toolboxes else tools
