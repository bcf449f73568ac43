"""FastAPI access to what the agents' handlers need beside the request's session."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Protocol

from fastapi import Depends, Request

from maestrale.agents.service import Sealer
from maestrale.core.app_services import app_services
from maestrale.core.auth.dependencies import CurrentTenant
from maestrale.core.auth.principal import Tenant


class ToolSealer(Protocol):
    """Seals the secrets of the tools a tenant stores (a connector tool's authorization)."""

    def seal(self, tenant: Tenant, tools: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        """`tools` with their secrets sealed at rest."""
        ...


async def get_sealer(request: Request, tenant: CurrentTenant) -> Sealer | None:
    factory: ToolSealer | None = app_services(request).toolboxes
    if factory is None:
        return None
    return lambda tools: factory.seal(tenant, tools)


AgentSealer = Annotated[Sealer | None, Depends(get_sealer)]
