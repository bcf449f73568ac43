"""Typed FastAPI access to the process's settings."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from maestrale.config import Settings
from maestrale.core.app_services import app_services


async def get_settings(request: Request) -> Settings:
    settings: Settings = app_services(request).settings
    return settings


AppSettings = Annotated[Settings, Depends(get_settings)]
