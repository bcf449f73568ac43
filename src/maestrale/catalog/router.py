"""The /v1/models group: list, read and delete models; rename, archive and unarchive fine-tuned
models."""

from __future__ import annotations

from functools import partial
from typing import Annotated

from fastapi import Depends, Query

from maestrale.catalog.dependencies import Artifacts
from maestrale.catalog.repository import FineTunedModelRepository
from maestrale.catalog.schemas import (
    FineTunedModelOut,
    ModelArchived,
    ModelCard,
    ModelDeleted,
    ModelList,
    ModelUpdate,
)
from maestrale.catalog.service import ModelService
from maestrale.core.auth.dependencies import CurrentTenant
from maestrale.core.routing import Work, domain_router
from maestrale.engines.dependencies import Engines

router = domain_router(tags=["models"])


def _models(work: Work, tenant: CurrentTenant, engines: Engines) -> ModelService:
    return ModelService(FineTunedModelRepository(work.session, tenant), engines)


Models = Annotated[ModelService, Depends(_models)]


@router.get("/models", response_model=ModelList, response_model_exclude_none=False)
async def list_models(
    models: Models,
    provider: str | None = Query(default=None, max_length=200),
    model: str | None = Query(default=None, max_length=200),
) -> ModelList:
    """List the base models of the catalog and the workspace's fine-tuned models."""
    cards = await models.list(provider=provider, model=model)
    return ModelList(data=cards)


@router.get("/models/{model_id:path}", response_model=ModelCard)
async def retrieve_model(model_id: str, models: Models) -> ModelCard:
    """Read one model card, by id or alias (`type` tells base from fine-tuned)."""
    return await models.get(model_id)


@router.delete("/models/{model_id:path}", response_model=ModelDeleted)
async def delete_model(
    model_id: str, models: Models, work: Work, artifacts: Artifacts
) -> ModelDeleted:
    """Delete a fine-tuned model of the workspace (its weights too, once that has committed).
    Base models cannot be deleted (400)."""
    row = await models.delete(model_id)
    if artifacts is not None:
        work.on_commit(partial(artifacts.forget, row.artifact))
    return ModelDeleted(id=row.id)


@router.patch("/fine_tuning/models/{model_id:path}", response_model=FineTunedModelOut)
async def update_fine_tuned_model(
    model_id: str, body: ModelUpdate, models: Models
) -> FineTunedModelOut:
    """Rename or re-describe a fine-tuned model."""
    return await models.update(model_id, body)


@router.post("/fine_tuning/models/{model_id:path}/archive", response_model=ModelArchived)
async def archive_fine_tuned_model(model_id: str, models: Models) -> ModelArchived:
    """Archive a fine-tuned model."""
    return await models.set_archived(model_id, True)


@router.delete("/fine_tuning/models/{model_id:path}/archive", response_model=ModelArchived)
async def unarchive_fine_tuned_model(model_id: str, models: Models) -> ModelArchived:
    """Unarchive a fine-tuned model."""
    return await models.set_archived(model_id, False)
