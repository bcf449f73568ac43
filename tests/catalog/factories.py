"""Fine-tuned model rows, created through the repository (the fine-tuning issue will create
them through real jobs)."""

from __future__ import annotations

from maestrale.catalog.repository import FineTunedModelRepository
from maestrale.catalog.tables import FineTunedModel
from maestrale.core.auth.principal import Tenant
from maestrale.core.db import Database
from maestrale.core.ids import new_id, short_token


async def create_fine_tuned(
    db: Database, tenant: Tenant, *, root: str = "maestrale-echo", model_type: str = "completion"
) -> FineTunedModel:
    async with db.transaction() as work:
        row = FineTunedModel(
            id=f"ft:{root}:{short_token(4)}:{short_token(4)}",
            root=root,
            root_version="1",
            job=new_id(),
            model_type=model_type,
            name="my model",
            capabilities={
                "completion_chat": model_type == "completion",
                "classification": model_type == "classifier",
            },
            classifier_targets=(
                [
                    {
                        "name": "topic",
                        "labels": ["a", "b"],
                        "weight": 1.0,
                        "loss_function": "single_class",
                    }
                ]
                if model_type == "classifier"
                else []
            ),
        )
        return await FineTunedModelRepository(work.session, tenant).add(row)
