"""FastAPI access to what the catalog's handlers need beside the engines."""

from __future__ import annotations

from typing import Annotated, Protocol

from fastapi import Depends, Request

from maestrale.core.app_services import app_services


class LocalArtifacts(Protocol):
    """The process's local copies of fine-tuned models' weights."""

    async def forget(self, artifact: str | None) -> None:
        """Drop the local copy of `artifact` (its model is gone)."""
        ...


async def get_artifacts(request: Request) -> LocalArtifacts | None:
    artifacts: LocalArtifacts | None = app_services(request).artifacts
    return artifacts


Artifacts = Annotated[LocalArtifacts | None, Depends(get_artifacts)]
