"""Business rules of the models group: base cards come from the catalog and cannot be changed;
fine-tuned models belong to a workspace and can be renamed, archived and deleted."""

from __future__ import annotations

from typing import Any

from maestrale.catalog.repository import FineTunedModelRepository
from maestrale.catalog.schemas import (
    BaseModelCard,
    FineTunedModelCapabilities,
    FineTunedModelOut,
    FTModelCard,
    ModelArchived,
    ModelCapabilities,
    ModelCard,
    ModelUpdate,
)
from maestrale.catalog.tables import FineTunedModel
from maestrale.core.clock import unix
from maestrale.core.errors import BadRequest, NotFound
from maestrale.engines.registry import EngineRegistry
from maestrale.engines.specs import CARD_CAPABILITIES, ModelSpec


class ModelNotFound(NotFound):
    code = "model_not_found"


class BaseModelImmutable(BadRequest):
    code = "base_model_immutable"


def base_card(spec: ModelSpec) -> BaseModelCard:
    flags = {cap: spec.has(cap) for cap in CARD_CAPABILITIES}
    return BaseModelCard(
        id=spec.id,
        created=spec.created,
        owned_by=spec.owned_by,
        name=spec.name or spec.id,
        description=spec.description,
        max_context_length=spec.max_context_length,
        aliases=spec.aliases,
        deprecation=spec.deprecation,
        deprecation_replacement_model=spec.deprecation_replacement_model,
        default_model_temperature=spec.default_model_temperature,
        capabilities=ModelCapabilities(**flags),
    )


def _ft_capabilities(row: FineTunedModel) -> FineTunedModelCapabilities:
    return FineTunedModelCapabilities.model_validate(row.capabilities or {})


def _ft_fields(row: FineTunedModel) -> dict[str, Any]:
    """What the fine-tuned card and the fine-tuned model shapes share."""
    return {
        "id": row.id,
        "created": unix(row.created_at),
        "owned_by": row.organization_id,
        "workspace_id": row.workspace_id,
        "root": row.root,
        "root_version": row.root_version,
        "archived": row.archived,
        "name": row.name,
        "description": row.description,
        "max_context_length": row.max_context_length,
        "job": row.job,
        "model_type": "classifier" if row.model_type == "classifier" else "completion",
    }


def ft_card(row: FineTunedModel) -> FTModelCard:
    caps = _ft_capabilities(row).model_dump()
    return FTModelCard(**_ft_fields(row), capabilities=ModelCapabilities(**caps))


def ft_model(row: FineTunedModel) -> FineTunedModelOut:
    targets = row.classifier_targets if row.model_type == "classifier" else None
    return FineTunedModelOut(
        **_ft_fields(row), capabilities=_ft_capabilities(row), classifier_targets=targets
    )


class ModelService:
    """The models group of one workspace: the engines' base models and its fine-tuned ones."""

    def __init__(self, fine_tuned: FineTunedModelRepository, engines: EngineRegistry) -> None:
        self.fine_tuned = fine_tuned
        self.engines = engines

    async def list(
        self, *, provider: str | None = None, model: str | None = None
    ) -> list[ModelCard]:
        """The base models' cards then the workspace's fine-tuned ones, filtered by owner
        (`provider`) and by id or alias (`model`)."""
        cards: list[ModelCard] = [base_card(spec) for spec in self.engines.specs]
        cards.extend(ft_card(row) for row in await self.fine_tuned.list_all())
        if provider:
            cards = [card for card in cards if card.owned_by == provider]
        if model:
            cards = [card for card in cards if card.id == model or model in card.aliases]
        return cards

    async def _fine_tuned(self, model_id: str) -> FineTunedModel:
        row = await self.fine_tuned.get(model_id)
        if row is None:
            raise ModelNotFound(f"model {model_id!r} not found", param="model_id")
        return row

    async def _mutable(self, model_id: str, verb: str) -> FineTunedModel:
        if self.engines.resolve(model_id) is not None:
            raise BaseModelImmutable(
                f"model {model_id!r} is a base model of the catalog and cannot be {verb}; "
                "only fine-tuned models can",
                param="model_id",
            )
        return await self._fine_tuned(model_id)

    async def get(self, model_id: str) -> ModelCard:
        """A model's card by id or alias: a base model, else a fine-tuned model of the
        workspace."""
        resolved = self.engines.resolve(model_id)
        if resolved is not None:
            return base_card(resolved.spec)
        return ft_card(await self._fine_tuned(model_id))

    async def delete(self, model_id: str) -> FineTunedModel:
        """Delete a fine-tuned model; the deleted row (its artifact goes after the commit)."""
        row = await self._mutable(model_id, "deleted")
        await self.fine_tuned.delete(row)
        return row

    async def update(self, model_id: str, changes: ModelUpdate) -> FineTunedModelOut:
        """Rename or re-describe a fine-tuned model (the fields the request sets)."""
        row = await self._mutable(model_id, "updated")
        for field in changes.model_fields_set & {"name", "description"}:
            setattr(row, field, getattr(changes, field))
        await self.fine_tuned.flush()
        return ft_model(row)

    async def set_archived(self, model_id: str, archived: bool) -> ModelArchived:
        """Archive or unarchive a fine-tuned model."""
        verb = "archived" if archived else "unarchived"
        row = await self._mutable(model_id, verb)
        row.archived = archived
        await self.fine_tuned.flush()
        return ModelArchived(id=row.id, archived=archived)
