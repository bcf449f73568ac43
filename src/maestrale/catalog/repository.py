"""SQL of fine-tuned models, scoped to the caller's workspace. The catalog owns their rows: the
fine-tuning job that trains one registers it here."""

from __future__ import annotations

from typing import Any

from maestrale.catalog.artifacts import ArtifactFormat
from maestrale.catalog.tables import FineTunedModel
from maestrale.core.repository import WorkspaceRepository


class FineTunedModelRepository(WorkspaceRepository[FineTunedModel]):
    model = FineTunedModel

    async def list_all(self) -> list[FineTunedModel]:
        return await self.list(self.select().order_by(FineTunedModel.created_at, FineTunedModel.id))

    async def flush(self) -> None:
        await self.session.flush()

    async def register(
        self,
        model_id: str,
        *,
        root: str,
        job: str,
        model_type: str,
        max_context_length: int,
        capabilities: dict[str, bool],
        classifier_targets: list[dict[str, Any]],
        artifact: str,
        artifact_format: ArtifactFormat,
    ) -> FineTunedModel:
        """Add the fine-tuned model a job trained, its `artifact` stored and of
        `artifact_format`, to the workspace."""
        row = FineTunedModel(
            id=model_id,
            root=root,
            job=job,
            model_type=model_type,
            max_context_length=max_context_length,
            capabilities=capabilities,
            classifier_targets=classifier_targets,
            artifact=artifact,
            artifact_format=artifact_format.value,
        )
        return await self.add(row)
