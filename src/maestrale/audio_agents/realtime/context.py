"""What a voice session runs with: the process's services it uses, who it runs for, and its
resolved configuration."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, Protocol

from maestrale.config import Settings
from maestrale.conversations.histories import Histories
from maestrale.conversations.server_tools import ToolboxFactory
from maestrale.core.auth.principal import Tenant
from maestrale.core.blobs import BlobStore
from maestrale.core.db import Database
from maestrale.engines.registry import EngineRegistry
from maestrale.gateway.gateway import Gateway
from maestrale.gateway.hooks import Caller


class VoiceServices(Protocol):
    """What a voice session reads of the process's services."""

    @property
    def settings(self) -> Settings: ...

    @property
    def db(self) -> Database: ...

    @property
    def blobs(self) -> BlobStore: ...

    @property
    def engines(self) -> EngineRegistry: ...

    @property
    def gateway(self) -> Gateway: ...

    @property
    def histories(self) -> Histories: ...

    @property
    def toolboxes(self) -> ToolboxFactory | None: ...


@dataclass(slots=True)
class SessionContext:
    session_id: str
    tenant: Tenant
    caller: Caller
    config: dict[str, Any]
    conversation_id: str | None
    services: VoiceServices
    # Set to end the session (DELETE /v1/audio/sessions/{id}).
    stop: asyncio.Event

    def part(self, name: str) -> dict[str, Any]:
        value = self.config.get(name)
        return value if isinstance(value, dict) else {}
