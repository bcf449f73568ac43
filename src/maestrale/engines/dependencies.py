"""FastAPI access to the app's engine registry."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from maestrale.core.app_services import app_services
from maestrale.engines.registry import EngineRegistry


async def get_engines(request: Request) -> EngineRegistry:
    registry: EngineRegistry = app_services(request).engines
    return registry


Engines = Annotated[EngineRegistry, Depends(get_engines)]
