"""A pipeline and its configs as the SDK reads them (Pipeline, PipelineConfig of judge-v1)."""

from __future__ import annotations

from typing import Any

from maestrale.observability.pipelines.schemas import (
    JudgeDefinitionV1,
    PipelineConfigOut,
    PipelineOut,
    SelectorOut,
)
from maestrale.observability.pipelines.tables import Pipeline, PipelineConfig


def result_spec(output: dict[str, Any]) -> dict[str, Any]:
    """A judge's output as an EvaluationResultSpec: its labels, or its range."""
    if output.get("type") == "CLASSIFICATION":
        return {"type": "categorical", "labels": [o["value"] for o in output["options"]]}
    return {"type": "numeric", "min": output.get("min", 0), "max": output.get("max", 1)}


def config_out(
    config: PipelineConfig, pipeline: Pipeline, selectors: list[SelectorOut]
) -> PipelineConfigOut:
    judge = config.judge_definition
    return PipelineConfigOut(
        id=config.id,
        created_at=config.created_at,
        updated_at=config.updated_at,
        workspace_id=config.workspace_id,
        name=config.name,
        slug=config.slug,
        selectors=selectors,
        enabled=pipeline.enabled,
        definition=JudgeDefinitionV1(
            model=judge["model_name"],
            prompt=judge["instructions"],
            result_spec=result_spec(judge["output"]),
            mapping=dict(config.mapping or {}),
        ),
        sampling=config.sampling,
        scorer_slug=config.judge_slug,
    )


def pipeline_out(pipeline: Pipeline, configs: list[PipelineConfig]) -> PipelineOut:
    selectors = [SelectorOut.model_validate(s) for s in pipeline.selectors]
    return PipelineOut(
        id=pipeline.id,
        created_at=pipeline.created_at,
        updated_at=pipeline.updated_at,
        workspace_id=pipeline.workspace_id,
        name=pipeline.name,
        slug=pipeline.slug,
        description=pipeline.description,
        selectors=selectors,
        enabled=pipeline.enabled,
        creator_id=pipeline.creator_id,
        pipeline_configs=[config_out(c, pipeline, selectors) for c in configs],
    )
