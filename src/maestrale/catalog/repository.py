"""SQL of fine-tuned models, scoped to the caller's workspace."""

from __future__ import annotations

from maestrale.catalog.tables import FineTunedModel
from maestrale.core.repository import WorkspaceRepository


class FineTunedModelRepository(WorkspaceRepository[FineTunedModel]):
    model = FineTunedModel

    async def list_all(self) -> list[FineTunedModel]:
        return await self.list(self.select().order_by(FineTunedModel.created_at, FineTunedModel.id))
