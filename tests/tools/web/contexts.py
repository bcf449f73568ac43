"""Tool contexts for direct `run` calls: the test app's services with changed settings."""

from __future__ import annotations

import dataclasses
from typing import Any

from maestrale.core.auth.principal import Tenant
from maestrale.services import Services
from maestrale.tools.base import ToolContext


def tool_context(services: Services, tenant: Tenant, tool: str, **settings: Any) -> ToolContext:
    """A context of `tool` whose services carry the app's settings changed by `settings`."""
    changed = services.settings.model_copy(update=settings)
    return ToolContext(tenant, dataclasses.replace(services, settings=changed), {"type": tool})
