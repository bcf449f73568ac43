"""Filters of runs and records (mistralai 3.x `EvaluationRunFilterInput`,
`EvaluationRunRecordFilterInput`) compiled to SQL conditions.

What maps to columns is served: ids, creators, projects, ownership (favorite projects are the
"starred" ones), tags, metadata comparisons, score ranges (a run's aggregate of its scores, a
record's own score), record sorts. The rest (goal and system filters, content search of inputs
and outputs, `std` of scores) is refused with a 400 that names it, never ignored."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field
from sqlalchemy import (
    ColumnElement,
    Float,
    and_,
    case,
    cast,
    exists,
    func,
    literal,
    or_,
    select,
    true,
    type_coerce,
)
from sqlalchemy.dialects.postgresql import JSONB

from maestrale.observability.errors import ObservabilityError
from maestrale.observability.evaluations.tables import (
    EvalProject,
    EvalRecord,
    EvalRun,
    EvalRunTag,
    EvalScore,
)

Combinator = Literal["and", "or"]
Ids = Annotated[list[Annotated[str, Field(max_length=200)]], Field(max_length=1000)]
Operator = Literal["gt", "gte", "lt", "lte", "eq"]
KEY = r"^[A-Za-z0-9_.-]{1,200}$"


class ScoreFilter(BaseModel):
    evaluator_name: str = Field(max_length=500)
    metric: str = Field(max_length=50)
    operator: Operator
    value: float | str


class ScoreFilterGroup(BaseModel):
    combinator: Combinator | None = None
    filters: list[ScoreFilter] | None = Field(default=None, max_length=50)


class TagFilter(BaseModel):
    combinator: Combinator | None = None
    values: list[Annotated[str, Field(max_length=200)]] | None = Field(default=None, max_length=100)


class MetadataFilter(BaseModel):
    key: str = Field(pattern=KEY)
    operator: Literal["eq", "contains", "gt", "gte", "lt", "lte"]
    value: bool | float | str


class MetadataFilterGroup(BaseModel):
    combinator: Combinator | None = None
    filters: list[MetadataFilter] | None = Field(default=None, max_length=50)


class Ownership(BaseModel):
    combinator: Combinator | None = None
    creator_ids: Ids | None = None
    project_ids: Ids | None = None
    starred_by_me: bool = False


class RunFilter(BaseModel):
    run_ids: Ids | None = None
    evaluation_ids: Ids | None = None
    creator_ids: Ids | None = None
    project_ids: Ids | None = None
    ownership: Ownership | None = None
    tags: TagFilter | None = None
    score_filters: ScoreFilterGroup | None = None
    goal_filters: dict[str, Any] | None = None
    system: dict[str, Any] | None = None
    metadata: MetadataFilterGroup | None = None


class FieldSort(BaseModel):
    kind: Literal["field"] = "field"
    field: Literal["created_at"]
    direction: Literal["asc", "desc"] | None = None


class ScoreSort(BaseModel):
    kind: Literal["score"] = "score"
    evaluator_name: str = Field(max_length=500)
    metric: Literal["avg", "min", "max", "std"] | None = None
    direction: Literal["asc", "desc"] | None = None


class RecordFilter(BaseModel):
    input_filters: dict[str, Any] | None = None
    output_filters: dict[str, Any] | None = None
    score_filters: ScoreFilterGroup | None = None
    goal_filters: dict[str, Any] | None = None
    sort: Annotated[FieldSort | ScoreSort, Field(discriminator="kind")] | None = None


def _refuse(names: list[str]) -> None:
    if names:
        raise ObservabilityError(
            f"unsupported filters: {', '.join(names)} (goals, systems and content search are "
            "not served by this server)",
            "VALIDATION_ERROR",
        )


def _active(group: dict[str, Any] | None) -> bool:
    """Whether a filter group that this server does not serve actually filters something."""
    return bool(group) and any(v for k, v in (group or {}).items() if k != "combinator")


def _join(combinator: Combinator | None, terms: list[ColumnElement[bool]]) -> ColumnElement[bool]:
    if not terms:
        return true()
    return or_(*terms) if combinator == "or" else and_(*terms)


def _compare(column: Any, operator: str, value: Any) -> ColumnElement[bool]:
    ops = {
        "eq": column == value,
        "gt": column > value,
        "gte": column >= value,
        "lt": column < value,
        "lte": column <= value,
    }
    result: ColumnElement[bool] = ops[operator]
    return result


def _metadata(f: MetadataFilter, dialect: str) -> ColumnElement[bool]:
    if f.operator == "contains":
        _refuse([f"metadata.{f.key} contains"])
    if isinstance(f.value, str | bool) and f.operator != "eq":
        raise ObservabilityError(
            f"metadata filter on {f.key!r}: {f.operator} needs a number", "VALIDATION_ERROR"
        )
    if dialect == "postgresql":
        if f.operator == "eq":
            return EvalRun.meta.op("@>")(type_coerce({f.key: f.value}, JSONB))
        item = EvalRun.meta.op("->")(f.key)
        number = case(
            (func.jsonb_typeof(item) == "number", cast(EvalRun.meta.op("->>")(f.key), Float))
        )
        return _compare(number, f.operator, f.value)
    path = f'$."{f.key}"'
    kind = func.json_type(EvalRun.meta, path)
    if isinstance(f.value, bool):
        return kind == ("true" if f.value else "false")
    value = func.json_extract(EvalRun.meta, path)
    if isinstance(f.value, str):
        return and_(kind == "text", value == f.value)
    return and_(kind.in_(["integer", "real"]), _compare(value, f.operator, f.value))


def _score_number(f: ScoreFilter, where: str) -> float:
    if f.metric not in ("avg", "min", "max"):
        _refuse([f"{where}.{f.evaluator_name}.{f.metric}"])
    if isinstance(f.value, str):
        raise ObservabilityError(
            f"score filter on {f.evaluator_name!r}: {f.metric} needs a number", "VALIDATION_ERROR"
        )
    return f.value


def _run_score(f: ScoreFilter) -> ColumnElement[bool]:
    value = _score_number(f, "score_filters")
    number = EvalScore.number
    aggregates = {"avg": func.avg(number), "min": func.min(number), "max": func.max(number)}
    aggregate = aggregates[f.metric]
    runs = (
        select(EvalScore.run_id)
        .where(EvalScore.evaluator_name == f.evaluator_name, EvalScore.number.is_not(None))
        .group_by(EvalScore.run_id)
        .having(_compare(aggregate, f.operator, value))
    )
    return EvalRun.id.in_(runs)


def run_conditions(body: RunFilter, dialect: str) -> list[ColumnElement[bool]]:
    """The conditions on EvalRun of a run search (AND-ed)."""
    _refuse([name for name in ("goal_filters", "system") if _active(getattr(body, name))])
    terms: list[ColumnElement[bool]] = []
    for ids, column in (
        (body.run_ids, EvalRun.id),
        (body.evaluation_ids, EvalRun.evaluation_id),
        (body.creator_ids, EvalRun.creator_id),
        (body.project_ids, EvalRun.project_id),
    ):
        if ids is not None:
            terms.append(column.in_(ids))
    if body.ownership is not None:
        own = body.ownership
        parts: list[ColumnElement[bool]] = []
        if own.creator_ids:
            parts.append(EvalRun.creator_id.in_(own.creator_ids))
        if own.project_ids:
            parts.append(EvalRun.project_id.in_(own.project_ids))
        if own.starred_by_me:
            starred = select(EvalProject.id).where(EvalProject.is_favorite.is_(True))
            parts.append(EvalRun.project_id.in_(starred))
        if parts:
            terms.append(_join(own.combinator or "or", parts))
    if body.tags is not None and body.tags.values:
        tagged: list[ColumnElement[bool]] = [
            exists().where(EvalRunTag.run_id == EvalRun.id, EvalRunTag.tag == tag)
            for tag in body.tags.values
        ]
        terms.append(_join(body.tags.combinator, tagged))
    if body.metadata is not None and body.metadata.filters:
        meta = [_metadata(f, dialect) for f in body.metadata.filters]
        terms.append(_join(body.metadata.combinator, meta))
    if body.score_filters is not None and body.score_filters.filters:
        scores = [_run_score(f) for f in body.score_filters.filters]
        terms.append(_join(body.score_filters.combinator, scores))
    return terms


def _record_score(f: ScoreFilter) -> ColumnElement[bool]:
    mine = and_(EvalScore.record_id == EvalRecord.id, EvalScore.evaluator_name == f.evaluator_name)
    if isinstance(f.value, str):
        if f.operator != "eq":
            raise ObservabilityError(
                f"score filter on {f.evaluator_name!r}: a label compares with eq only",
                "VALIDATION_ERROR",
            )
        return exists().where(mine, EvalScore.label == f.value)
    value = _score_number(f, "score_filters")
    return exists().where(mine, _compare(EvalScore.number, f.operator, literal(value)))


def record_conditions(body: RecordFilter) -> list[ColumnElement[bool]]:
    """The conditions on EvalRecord of a record search or a filtered statistics (AND-ed)."""
    unserved = ("input_filters", "output_filters", "goal_filters")
    _refuse([name for name in unserved if _active(getattr(body, name))])
    if body.score_filters is None or not body.score_filters.filters:
        return []
    scores = [_record_score(f) for f in body.score_filters.filters]
    return [_join(body.score_filters.combinator, scores)]
