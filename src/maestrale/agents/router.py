"""The /v1/agents group (beta): versioned agents with aliases."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Query, Response

from maestrale.agents.dependencies import AgentSealer
from maestrale.agents.schemas import (
    AgentAliasOut,
    AgentCreate,
    AgentListPage,
    AgentOut,
    AgentUpdate,
)
from maestrale.agents.service import AgentService
from maestrale.core.auth.dependencies import CurrentTenant
from maestrale.core.errors import error_responses
from maestrale.core.metadata import metadata_filter
from maestrale.core.pagination import PageParams
from maestrale.core.routing import Work, domain_router
from maestrale.engines.dependencies import Engines

router = domain_router(prefix="/agents", tags=["agents"])

Sources = Annotated[list[str] | None, Query()]


def _filters(
    name: str | None,
    search: str | None,
    id_: str | None,
    deployment_chat: bool | None,
    metadata: str | None,
) -> dict[str, Any]:
    return {
        "name": name,
        "search": search,
        "id_": id_,
        "deployment_chat": deployment_chat,
        "metadata": metadata_filter(metadata),
    }


@router.post("", response_model=AgentOut, responses=error_responses((404,)))
async def create_agent(
    body: AgentCreate,
    work: Work,
    tenant: CurrentTenant,
    engines: Engines,
    sealer: AgentSealer,
) -> AgentOut:
    """Create an agent (version 1): a model with instructions, tools, completion arguments,
    handoffs (ids of the workspace's agents), guardrails and metadata; and, beyond the SDK, a
    stored `prompt` (`{id, version?, alias?, variables?}`) whose rendered text leads its
    instructions and `skills` (`[{id, version?, alias?}]`) bundled after them."""
    return await AgentService(work.session, tenant, engines, sealer).create(body)


@router.get("", response_model=list[AgentOut])
async def list_agents(
    work: Work,
    tenant: CurrentTenant,
    engines: Engines,
    page: int = 0,
    page_size: int = 20,
    deployment_chat: bool | None = None,
    sources: Sources = None,
    name: str | None = None,
    search: str | None = None,
    id: str | None = None,
    metadata: str | None = None,
) -> list[AgentOut]:
    """Deprecated: the workspace's agents, newest first, by page (counted from 0). Use
    `GET /v1/agents/pages`."""
    return await AgentService(work.session, tenant, engines).list_agents(
        PageParams(page, page_size),
        sources,
        **_filters(name, search, id, deployment_chat, metadata),
    )


@router.get("/pages", response_model=AgentListPage)
async def list_agent_pages(
    work: Work,
    tenant: CurrentTenant,
    engines: Engines,
    page_size: int = 20,
    page_token: str | None = None,
    deployment_chat: bool | None = None,
    sources: Sources = None,
    name: str | None = None,
    search: str | None = None,
    id: str | None = None,
    metadata: str | None = None,
) -> AgentListPage:
    """The workspace's agents, newest first, by cursor: pass a response's `next_page_token` as
    `page_token` for the next page (null on the last)."""
    return await AgentService(work.session, tenant, engines).list_pages(
        page_size, page_token, sources, **_filters(name, search, id, deployment_chat, metadata)
    )


@router.get("/{agent_id}", response_model=AgentOut)
async def get_agent(
    agent_id: str,
    work: Work,
    tenant: CurrentTenant,
    engines: Engines,
    agent_version: str | None = None,
) -> AgentOut:
    """An agent at its current version, or at `agent_version` (a version number or an alias)."""
    return await AgentService(work.session, tenant, engines).get(agent_id, agent_version)


@router.patch("/{agent_id}", response_model=AgentOut)
async def update_agent(
    agent_id: str,
    body: AgentUpdate,
    work: Work,
    tenant: CurrentTenant,
    engines: Engines,
    sealer: AgentSealer,
) -> AgentOut:
    """Update an agent: a new version, made current, holding the current version's fields with
    the given ones changed."""
    service = AgentService(work.session, tenant, engines, sealer)
    return await service.update(agent_id, body)


@router.delete("/{agent_id}", status_code=204)
async def delete_agent(
    agent_id: str, work: Work, tenant: CurrentTenant, engines: Engines
) -> Response:
    """Delete an agent with all its versions and aliases."""
    await AgentService(work.session, tenant, engines).delete(agent_id)
    return Response(status_code=204)


@router.patch("/{agent_id}/version", response_model=AgentOut)
async def switch_agent_version(
    agent_id: str, version: int, work: Work, tenant: CurrentTenant, engines: Engines
) -> AgentOut:
    """Make an existing version the agent's current version."""
    return await AgentService(work.session, tenant, engines).switch_version(agent_id, version)


@router.get("/{agent_id}/versions", response_model=list[AgentOut])
async def list_agent_versions(
    agent_id: str,
    work: Work,
    tenant: CurrentTenant,
    engines: Engines,
    page: int = 0,
    page_size: int = 20,
) -> list[AgentOut]:
    """Every version of an agent, oldest first, by page (counted from 0)."""
    return await AgentService(work.session, tenant, engines).versions(
        agent_id, PageParams(page, page_size)
    )


@router.get("/{agent_id}/versions/{version}", response_model=AgentOut)
async def get_agent_version(
    agent_id: str, version: str, work: Work, tenant: CurrentTenant, engines: Engines
) -> AgentOut:
    """One version of an agent, by number."""
    return await AgentService(work.session, tenant, engines).get_version(agent_id, version)


@router.get("/{agent_id}/aliases", response_model=list[AgentAliasOut])
async def list_agent_aliases(
    agent_id: str, work: Work, tenant: CurrentTenant, engines: Engines
) -> list[AgentAliasOut]:
    """The agent's version aliases."""
    return await AgentService(work.session, tenant, engines).aliases(agent_id)


@router.put("/{agent_id}/aliases", response_model=AgentAliasOut)
async def put_agent_alias(
    agent_id: str,
    alias: str,
    version: int,
    work: Work,
    tenant: CurrentTenant,
    engines: Engines,
) -> AgentAliasOut:
    """Create an alias on a version, or move an existing alias to that version."""
    return await AgentService(work.session, tenant, engines).put_alias(agent_id, alias, version)


@router.delete("/{agent_id}/aliases", status_code=204)
async def delete_agent_alias(
    agent_id: str, alias: str, work: Work, tenant: CurrentTenant, engines: Engines
) -> Response:
    """Delete a version alias (the version itself stays)."""
    await AgentService(work.session, tenant, engines).delete_alias(agent_id, alias)
    return Response(status_code=204)
