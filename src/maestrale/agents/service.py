"""Business rules of agents: creation, versioning (every update is a new version), version
selection by number or alias, aliases, lists and deletion."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from maestrale.agents.repository import AgentRepository
from maestrale.agents.schemas import (
    AgentAliasOut,
    AgentCreate,
    AgentFields,
    AgentListPage,
    AgentOut,
    AgentUpdate,
)
from maestrale.agents.tables import Agent, AgentAlias, AgentVersion
from maestrale.catalog.repository import FineTunedModelRepository
from maestrale.catalog.service import ModelNotFound
from maestrale.core.auth.principal import Tenant
from maestrale.core.clock import utcnow
from maestrale.core.errors import BadRequest, NotFound
from maestrale.core.ids import new_id
from maestrale.core.pagination import PageParams, decode_cursor, encode_cursor
from maestrale.engines.registry import EngineRegistry
from maestrale.guardrails.schemas import stored
from maestrale.registries.lookup import RegistryLookup
from maestrale.registries.references import check_refs, stored_refs

SOURCE = "api"
MAX_VERSION = 2**31


class AgentNotFound(NotFound):
    code = "agent_not_found"


# Seals the secrets of a tool list before it is stored.
Sealer = Callable[[list[dict[str, Any]]], list[dict[str, Any]]]


class AgentVersionNotFound(NotFound):
    code = "agent_version_not_found"


class AliasNotFound(NotFound):
    code = "agent_alias_not_found"


class InvalidHandoff(BadRequest):
    code = "invalid_handoff"


class InvalidAlias(BadRequest):
    code = "invalid_alias"


def new_agent_id() -> str:
    return "ag_" + new_id().replace("-", "")


def describe(agent: Agent, row: AgentVersion, versions: list[int]) -> AgentOut:
    refs = row.registry_refs or {}
    return AgentOut(
        model=row.model,
        name=row.name,
        id=agent.id,
        version=row.version,
        versions=versions,
        created_at=agent.created_at,
        updated_at=row.created_at,
        deployment_chat=row.deployment_chat,
        source=SOURCE,
        instructions=row.instructions,
        tools=list(row.tools or []),
        completion_args=dict(row.completion_args or {}),
        guardrails=row.guardrails,
        description=row.description,
        handoffs=row.handoffs,
        metadata=row.meta,
        version_message=row.version_message,
        prompt=refs.get("prompt"),
        skills=refs.get("skills"),
    )


def alias_out(row: AgentAlias) -> AgentAliasOut:
    return AgentAliasOut(
        alias=row.alias, version=row.version, created_at=row.created_at, updated_at=row.updated_at
    )


class AgentService:
    def __init__(
        self,
        session: AsyncSession,
        tenant: Tenant,
        engines: EngineRegistry,
        seal: Sealer | None = None,
    ) -> None:
        self.session = session
        self.tenant = tenant
        self.engines = engines
        # Seals the secrets of the tools an agent stores (a connector tool's authorization).
        self.seal = seal
        self.repo = AgentRepository(session, tenant)

    # Reads.

    async def agent(self, agent_id: str) -> Agent:
        row = await self.repo.get(agent_id)
        if row is None:
            raise AgentNotFound(f"agent {agent_id!r} not found", param="agent_id")
        return row

    async def version_row(self, agent: Agent, version: int) -> AgentVersion:
        # Out of the column's range, a version cannot exist (and must not reach the database).
        row = await self.repo.version(agent, version) if 0 < version < MAX_VERSION else None
        if row is None:
            raise AgentVersionNotFound(
                f"agent {agent.id!r} has no version {version}", param="version"
            )
        return row

    async def agent_version(
        self, agent_id: str, selector: str | int | None
    ) -> tuple[Agent, AgentVersion]:
        """The agent and its version named by `selector` (see `resolve_version`); a version
        number is read with its agent in one query (a conversation's pinned version)."""
        if isinstance(selector, int) and 0 < selector < MAX_VERSION:
            found = await self.repo.with_version(agent_id, selector)
            if found is not None:
                return found
        agent = await self.agent(agent_id)
        selected = None if selector is None else str(selector)
        return agent, await self.resolve_version(agent, selected)

    async def resolve_version(self, agent: Agent, selector: str | None) -> AgentVersion:
        """The version named by `selector`: an integer, an alias, or (None) the current one."""
        if selector is None or selector == "":
            return await self.version_row(agent, agent.current_version)
        if selector.lstrip("-").isdigit():
            return await self.version_row(agent, int(selector))
        alias = await self.repo.alias(agent, selector)
        if alias is None:
            raise AliasNotFound(
                f"agent {agent.id!r} has no version or alias {selector!r}", param="agent_version"
            )
        return await self.version_row(agent, alias.version)

    async def get(self, agent_id: str, selector: str | None = None) -> AgentOut:
        agent = await self.agent(agent_id)
        row = await self.resolve_version(agent, selector)
        return describe(agent, row, await self.repo.version_numbers(agent))

    async def _describe_many(self, agents: list[Agent]) -> list[AgentOut]:
        current = await self.repo.current_versions(agents)
        numbers = await self.repo.all_version_numbers(agents)
        return [describe(a, current[a.id], numbers[a.id]) for a in agents]

    async def list_agents(
        self, page: PageParams, sources: list[str] | None, **filters: Any
    ) -> list[AgentOut]:
        if sources is not None and SOURCE not in sources:
            return []
        rows = await self.repo.page(self.repo.filtered(**filters), page)
        return await self._describe_many(rows)

    async def list_pages(
        self, page_size: int, page_token: str | None, sources: list[str] | None, **filters: Any
    ) -> AgentListPage:
        PageParams(0, page_size)  # validates the size
        if sources is not None and SOURCE not in sources:
            return AgentListPage(data=[], next_page_token=None)
        cursor: tuple[datetime, str] | None = None
        if page_token:
            raw = decode_cursor(page_token)
            try:
                cursor = (datetime.fromisoformat(str(raw["c"])), str(raw["i"]))
            except (KeyError, ValueError) as exc:
                raise BadRequest(
                    "invalid page_token", code="invalid_cursor", param="page_token"
                ) from exc
        rows = await self.repo.after(self.repo.filtered(**filters), cursor, page_size + 1)
        more = len(rows) > page_size
        rows = rows[:page_size]
        token = None
        if more and rows:
            token = encode_cursor({"c": rows[-1].created_at.isoformat(), "i": rows[-1].id})
        return AgentListPage(data=await self._describe_many(rows), next_page_token=token)

    async def versions(self, agent_id: str, page: PageParams) -> list[AgentOut]:
        agent = await self.agent(agent_id)
        numbers = await self.repo.version_numbers(agent)
        return [describe(agent, row, numbers) for row in await self.repo.versions_page(agent, page)]

    async def get_version(self, agent_id: str, version: str) -> AgentOut:
        agent = await self.agent(agent_id)
        if not version.lstrip("-").isdigit():
            raise BadRequest(
                f"version must be an integer, not {version!r}",
                code="invalid_version",
                param="version",
            )
        row = await self.version_row(agent, int(version))
        return describe(agent, row, await self.repo.version_numbers(agent))

    # Writes.

    async def check_model(self, model: str) -> None:
        if self.engines.resolve(model) is not None:
            return
        if await FineTunedModelRepository(self.session, self.tenant).get(model) is not None:
            return
        raise ModelNotFound(f"model {model!r} not found", param="model")

    async def _check_handoffs(self, handoffs: list[str] | None, own_id: str | None) -> None:
        if not handoffs:
            return
        wanted = set(handoffs) - ({own_id} if own_id else set())
        missing = sorted(wanted - await self.repo.existing_ids(sorted(wanted)))
        if missing:
            raise InvalidHandoff(
                f"handoffs name agents that do not exist: {', '.join(missing)}", param="handoffs"
            )

    async def _append_version(self, agent: Agent, values: dict[str, Any]) -> AgentVersion:
        now = utcnow()
        agent.last_version += 1
        row = AgentVersion(version=agent.last_version, created_at=now, **values)
        await self.repo.add_version(agent, row)
        agent.current_version = row.version
        self._mirror(agent, row)
        agent.updated_at = now
        await self.session.flush()
        return row

    @staticmethod
    def _mirror(agent: Agent, row: AgentVersion) -> None:
        agent.name, agent.model = row.name, row.model
        agent.meta, agent.deployment_chat = row.meta, row.deployment_chat

    def _fields(self, body: AgentFields, only_set: bool) -> dict[str, Any]:
        given = body.model_fields_set if only_set else set(type(body).model_fields)
        values: dict[str, Any] = {}
        for name in given:
            value = getattr(body, name)
            if name == "tools":
                tools = [tool.stored() for tool in value or []]
                values["tools"] = self.seal(tools) if self.seal else tools
            elif name == "completion_args":
                values["completion_args"] = value.stored() if value is not None else {}
            elif name == "metadata":
                values["meta"] = value
            elif name == "guardrails":
                values["guardrails"] = stored(value)
            elif name in ("prompt", "skills"):
                continue  # kept together in `registry_refs` (`_refs`)
            elif name in ("model", "name", "deployment_chat") and value is None:
                continue  # null means "unchanged" for the required fields
            else:
                values[name] = value
        values.pop("version_message", None)
        values["version_message"] = body.version_message
        return values

    async def _refs(self, body: AgentFields, kept: dict[str, Any] | None) -> dict[str, Any] | None:
        """The prompt and skills references to store (`registry_refs`): `kept` (the current
        version's) with those the request sets (null removes one), checked to exist now."""
        given = body.model_fields_set & {"prompt", "skills"}
        if not given:
            return kept or None
        refs = dict(kept or {})
        new = stored_refs(body.prompt, body.skills) or {}
        for name in given:
            refs.pop(name, None)
            if name in new:
                refs[name] = new[name]
        prompt = refs.get("prompt")
        if isinstance(prompt, dict) and prompt.get("id") is None:
            raise BadRequest("an agent's `prompt` names a prompt: give its `id`", param="prompt.id")
        await check_refs(RegistryLookup(self.session, self.tenant), refs)
        return refs or None

    async def create(self, body: AgentCreate) -> AgentOut:
        await self.check_model(body.model)
        await self._check_handoffs(body.handoffs, None)
        values = self._fields(body, only_set=False)
        values["registry_refs"] = await self._refs(body, None)
        now = utcnow()
        agent = Agent(
            id=new_agent_id(), name=body.name, model=body.model, created_at=now, updated_at=now
        )
        await self.repo.add(agent)
        row = await self._append_version(agent, values)
        return describe(agent, row, [row.version])

    async def update(self, agent_id: str, body: AgentUpdate) -> AgentOut:
        """A new version: the current one with the given fields changed."""
        agent = await self.agent(agent_id)
        current = await self.version_row(agent, agent.current_version)
        changes = self._fields(body, only_set=True)
        if "model" in changes:
            await self.check_model(changes["model"])
        if changes.get("handoffs"):
            await self._check_handoffs(changes["handoffs"], agent.id)
        changes["registry_refs"] = await self._refs(body, current.registry_refs)
        base = {
            "model": current.model,
            "name": current.name,
            "instructions": current.instructions,
            "tools": current.tools,
            "completion_args": current.completion_args,
            "guardrails": current.guardrails,
            "description": current.description,
            "handoffs": current.handoffs,
            "meta": current.meta,
            "deployment_chat": current.deployment_chat,
        }
        row = await self._append_version(agent, {**base, **changes})
        return describe(agent, row, await self.repo.version_numbers(agent))

    async def switch_version(self, agent_id: str, version: int) -> AgentOut:
        agent = await self.agent(agent_id)
        row = await self.version_row(agent, version)
        agent.current_version = row.version
        self._mirror(agent, row)
        agent.updated_at = utcnow()
        await self.session.flush()
        return describe(agent, row, await self.repo.version_numbers(agent))

    async def delete(self, agent_id: str) -> None:
        await self.repo.delete_agent(await self.agent(agent_id))

    # Aliases.

    async def aliases(self, agent_id: str) -> list[AgentAliasOut]:
        agent = await self.agent(agent_id)
        return [alias_out(row) for row in await self.repo.aliases(agent)]

    async def put_alias(self, agent_id: str, alias: str, version: int) -> AgentAliasOut:
        """Create `alias` on `version`, or move it there."""
        if not alias.strip() or alias.lstrip("-").isdigit() or len(alias) > 256:
            raise InvalidAlias(
                "an alias is a non-empty name of at most 256 characters that is not a number",
                param="alias",
            )
        agent = await self.agent(agent_id)
        await self.version_row(agent, version)
        row = await self.repo.alias(agent, alias)
        now = utcnow()
        if row is None:
            row = await self.repo.add_alias(
                AgentAlias(
                    agent_id=agent.id,
                    alias=alias,
                    version=version,
                    created_at=now,
                    updated_at=now,
                )
            )
        else:
            row.version, row.updated_at = version, now
            await self.session.flush()
        return alias_out(row)

    async def delete_alias(self, agent_id: str, alias: str) -> None:
        agent = await self.agent(agent_id)
        row = await self.repo.alias(agent, alias)
        if row is None:
            raise AliasNotFound(f"agent {agent.id!r} has no alias {alias!r}", param="alias")
        await self.repo.delete_alias(row)
