"""FastAPI access to the app's engine registry."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from maestrale.engines.registry import EngineRegistry


async def get_engines(request: Request) -> EngineRegistry:
    registry: EngineRegistry = request.app.state.engines
    return registry


Engines = Annotated[EngineRegistry, Depends(get_engines)]
