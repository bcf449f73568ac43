"""A run's records on the wire (mistralai 3.x `EvaluationRunRecordV2Response`): the input, and
once scored one output record with one generation holding each evaluator's score. Runs judge
their inputs as they are (no model generates), so the generation's output is the judged
conversation's last message."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from maestrale.observability.evaluations.runs.repository import RunRepository
from maestrale.observability.evaluations.runs.schemas import (
    GenerationOut,
    OutputRecordOut,
    RecordOut,
    ScoreOut,
)
from maestrale.observability.evaluations.runs.tasks import conversation
from maestrale.observability.evaluations.tables import EvalRecord, EvalScore


def _last_message(input_: Any) -> Any:
    messages, _ = conversation(input_)
    return messages[-1] if messages else None


def _score(score: EvalScore) -> ScoreOut:
    return ScoreOut(
        id=score.id,
        created_at=score.created_at,
        updated_at=score.created_at,
        value=score.value,
        status=score.status,
        rationale=score.rationale,
        error=score.error,
    )


async def record_outs(
    repo: RunRepository, run_id: str, records: Sequence[EvalRecord]
) -> list[RecordOut]:
    scores: dict[str, dict[str, list[ScoreOut]]] = {}
    for score in await repo.scores_of(run_id, [r.id for r in records]):
        scores.setdefault(score.record_id, {}).setdefault(score.evaluator_name, []).append(
            _score(score)
        )
    outs = []
    for record in records:
        output = None
        if record.scored_at is not None:
            mine = scores.get(record.id, {})
            failed = [s.error for group in mine.values() for s in group if s.status != "completed"]
            generation = GenerationOut(
                id=record.id,
                created_at=record.scored_at,
                updated_at=record.scored_at,
                output=_last_message(record.input),
                status="failed" if failed else "completed",
                error="; ".join(e for e in failed if e) or None,
                scores=mine,
            )
            output = OutputRecordOut(
                id=record.id,
                created_at=record.scored_at,
                updated_at=record.scored_at,
                generations=[generation],
            )
        outs.append(
            RecordOut(
                id=record.id,
                created_at=record.created_at,
                updated_at=record.updated_at,
                deleted_at=record.deleted_at,
                input=record.input,
                dataset_record_id=record.dataset_record_id,
                output_record=output,
            )
        )
    return outs
