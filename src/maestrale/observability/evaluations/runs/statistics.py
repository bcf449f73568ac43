"""Statistics of a run's scores per evaluator (mistralai 3.x `EvaluatorStatistics`): numeric for
a REGRESSION judge (count, avg, min, max, population std), categorical for a CLASSIFICATION judge
(label frequencies and mode; scores that failed are the `excluded_count`). Goals are not
served: `goal_results` stays empty and `passed` null."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from sqlalchemy import ColumnElement

from maestrale.observability.evaluations.runs.repository import RunRepository
from maestrale.observability.evaluations.runs.schemas import (
    CategoricalStatistics,
    NumericStatistics,
    Statistics,
)


async def run_statistics(
    repo: RunRepository,
    run_id: str,
    evaluators: Sequence[dict[str, Any]],
    conditions: Sequence[ColumnElement[bool]] = (),
) -> dict[str, Statistics]:
    """Each evaluator's statistics over the run's records that meet the conditions."""
    numeric = await repo.numeric_stats(run_id, conditions)
    labels = await repo.label_counts(run_id, conditions)
    failed: dict[str, int] = {}
    for name, status, count in await repo.status_counts(run_id, conditions):
        if status != "completed":
            failed[name] = failed.get(name, 0) + count
    out: dict[str, Statistics] = {}
    for snap in evaluators:
        name = snap["definition"]["name"]
        if snap["definition"]["output"].get("type") == "REGRESSION":
            count, avg, low, high, squares = numeric.get(name, (0, None, None, None, None))
            std = None
            if avg is not None and squares is not None:
                std = math.sqrt(max(0.0, squares - avg * avg))
            out[name] = NumericStatistics(
                sample_count=count, count=count, avg=avg, min=low, max=high, std=std
            )
        else:
            frequencies = {label: n for evaluator, label, n in labels if evaluator == name}
            top = max(frequencies.values(), default=0)
            out[name] = CategoricalStatistics(
                frequencies=frequencies,
                mode=sorted(label for label, n in frequencies.items() if n == top and top),
                count=sum(frequencies.values()),
                excluded_count=failed.get(name, 0),
            )
    return out
