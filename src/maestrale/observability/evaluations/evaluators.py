"""Judges as evaluators: the snapshot of a judge a run keeps (so later edits do not change it),
and its wire shape (mistralai 3.x `EvaluatorV2`)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from maestrale.observability.evaluations.projects.schemas import EvaluatorOut
from maestrale.observability.judges.service import definition_of
from maestrale.observability.judges.tables import Judge


def snapshot(judge: Judge) -> dict[str, Any]:
    """The judge as a run keeps it (JSON): its identity, timestamps and definition."""
    return {
        "id": judge.id,
        "created_at": judge.created_at.isoformat(),
        "updated_at": judge.updated_at.isoformat(),
        "deleted_at": judge.deleted_at.isoformat() if judge.deleted_at else None,
        "definition": definition_of(judge).model_dump(),
    }


def evaluator_out(snap: dict[str, Any]) -> EvaluatorOut:
    definition = snap["definition"]
    output = definition["output"]
    numeric = output.get("type") == "REGRESSION"
    deleted = snap.get("deleted_at")
    return EvaluatorOut(
        id=snap["id"],
        created_at=datetime.fromisoformat(snap["created_at"]),
        updated_at=datetime.fromisoformat(snap["updated_at"]),
        deleted_at=datetime.fromisoformat(deleted) if deleted else None,
        name=definition["name"],
        description=definition["description"] or None,
        tags=[],
        direction="maximize" if numeric else None,
        min_value=output.get("min") if numeric else None,
        max_value=output.get("max") if numeric else None,
    )
