"""SQL of agents, versions and aliases. Versions and aliases are reached only through an agent
read from the caller's workspace, so they are tenant-scoped by construction."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

import sqlalchemy as sa

from maestrale.agents.tables import Agent, AgentAlias, AgentVersion
from maestrale.core.pagination import PageParams, keyset_after
from maestrale.core.repository import WorkspaceRepository


class AgentRepository(WorkspaceRepository[Agent]):
    model = Agent

    def filtered(
        self,
        *,
        name: str | None = None,
        search: str | None = None,
        id_: str | None = None,
        deployment_chat: bool | None = None,
        metadata: Mapping[str, str] | None = None,
    ) -> sa.Select[Agent]:
        stmt = self.select()
        if name is not None:
            stmt = stmt.where(Agent.name == name)
        if search:  # a substring: `%`, `_` and the escape character match themselves
            stmt = stmt.where(
                sa.or_(
                    sa.func.lower(Agent.name).contains(search.lower(), autoescape=True),
                    Agent.id.contains(search, autoescape=True),
                )
            )
        if id_ is not None:
            stmt = stmt.where(Agent.id == id_)
        if deployment_chat is not None:
            stmt = stmt.where(Agent.deployment_chat == deployment_chat)
        for key, value in (metadata or {}).items():
            stmt = stmt.where(Agent.meta[key].as_string() == value)
        return stmt

    async def page(self, stmt: sa.Select[Agent], page: PageParams) -> list[Agent]:
        ordered = stmt.order_by(Agent.created_at.desc(), Agent.id.desc())
        return await self.list(ordered.offset(page.offset).limit(page.limit))

    async def after(
        self, stmt: sa.Select[Agent], cursor: tuple[datetime, str] | None, limit: int
    ) -> list[Agent]:
        if cursor is not None:
            stmt = stmt.where(
                keyset_after([Agent.created_at, Agent.id], list(cursor), descending=True)
            )
        ordered = stmt.order_by(Agent.created_at.desc(), Agent.id.desc())
        return await self.list(ordered.limit(limit))

    async def with_version(self, agent_id: str, version: int) -> tuple[Agent, AgentVersion] | None:
        """The workspace's agent and one of its versions, in one query."""
        stmt = (
            sa.select(Agent, AgentVersion)
            .join(AgentVersion, AgentVersion.agent_id == Agent.id)
            .where(
                Agent.workspace_id == self.tenant.workspace_id,
                Agent.id == agent_id,
                AgentVersion.version == version,
            )
        )
        found = (await self.session.execute(stmt)).one_or_none()
        return None if found is None else (found[0], found[1])

    async def existing_ids(self, ids: list[str]) -> set[str]:
        rows = await self.session.execute(
            sa.select(Agent.id).where(
                Agent.workspace_id == self.tenant.workspace_id, Agent.id.in_(ids)
            )
        )
        return set(rows.scalars())

    # Versions of an agent already read from this workspace.

    async def version(self, agent: Agent, version: int) -> AgentVersion | None:
        return await self.session.get(AgentVersion, (agent.id, version))

    async def version_numbers(self, agent: Agent) -> list[int]:
        rows = await self.session.execute(
            sa.select(AgentVersion.version)
            .where(AgentVersion.agent_id == agent.id)
            .order_by(AgentVersion.version)
        )
        return list(rows.scalars())

    async def versions_page(self, agent: Agent, page: PageParams) -> list[AgentVersion]:
        rows = await self.session.execute(
            sa.select(AgentVersion)
            .where(AgentVersion.agent_id == agent.id)
            .order_by(AgentVersion.version)
            .offset(page.offset)
            .limit(page.limit)
        )
        return list(rows.scalars())

    async def current_versions(self, agents: list[Agent]) -> dict[str, AgentVersion]:
        if not agents:
            return {}
        rows = await self.session.execute(
            sa.select(AgentVersion).where(
                sa.tuple_(AgentVersion.agent_id, AgentVersion.version).in_(
                    [(a.id, a.current_version) for a in agents]
                )
            )
        )
        return {row.agent_id: row for row in rows.scalars()}

    async def all_version_numbers(self, agents: list[Agent]) -> dict[str, list[int]]:
        numbers: dict[str, list[int]] = {a.id: [] for a in agents}
        if not agents:
            return numbers
        rows = await self.session.execute(
            sa.select(AgentVersion.agent_id, AgentVersion.version)
            .where(AgentVersion.agent_id.in_(list(numbers)))
            .order_by(AgentVersion.version)
        )
        for agent_id, version in rows.all():
            numbers[agent_id].append(version)
        return numbers

    async def add_version(self, agent: Agent, row: AgentVersion) -> AgentVersion:
        row.agent_id = agent.id
        self.session.add(row)
        await self.session.flush()
        return row

    # Aliases.

    async def alias(self, agent: Agent, alias: str) -> AgentAlias | None:
        return await self.session.get(AgentAlias, (agent.id, alias))

    async def aliases(self, agent: Agent) -> list[AgentAlias]:
        rows = await self.session.execute(
            sa.select(AgentAlias).where(AgentAlias.agent_id == agent.id).order_by(AgentAlias.alias)
        )
        return list(rows.scalars())

    async def add_alias(self, row: AgentAlias) -> AgentAlias:
        self.session.add(row)
        await self.session.flush()
        return row

    async def delete_alias(self, row: AgentAlias) -> None:
        await self.session.delete(row)
        await self.session.flush()

    async def delete_agent(self, agent: Agent) -> None:
        """The agent with its versions and aliases (explicitly: SQLite may run without
        foreign-key cascades)."""
        for table in (AgentAlias, AgentVersion):
            await self.session.execute(sa.delete(table).where(table.agent_id == agent.id))
        await self.delete(agent)
