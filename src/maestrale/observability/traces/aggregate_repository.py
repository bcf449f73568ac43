"""The SQL of aggregations over traces and spans, scoped to the caller's workspace: count,
count_distinct, sum, avg, min and max in SQL on both databases, grouped by dimensions and by
time buckets (floor(time / width), calendar months apart); percentiles with Postgres'
percentile_cont, and on SQLite (which has none) in Python over each group's values, refused
past MAX_PERCENTILE_ROWS values."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import orjson
from sqlalchemy import BigInteger, ColumnElement, Select, distinct, func, literal, select
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.functions import FunctionElement

from maestrale.observability.budget import search_budget
from maestrale.observability.traces.aggregation import (
    METRIC_VALUE,
    MONTH,
    NS,
    PERCENTILES,
    TIME_BUCKET,
    Plan,
    bad_aggregation,
    percentile,
    sort_rows,
)
from maestrale.observability.traces.repository import TelemetryRepository
from maestrale.telemetry.search.model import Entity

MAX_PERCENTILE_ROWS = 1_000_000
# The epoch was a Thursday: weeks start on Monday, three days later.
_WEEK_SHIFT = 3 * 86_400 * NS


class month_start(FunctionElement[int]):
    """The start of the calendar month (UTC) of a time in nanoseconds, in nanoseconds."""

    type = BigInteger()
    name = "month_start"
    inherit_cache = True


@compiles(month_start, "sqlite")
def _month_sqlite(element: month_start, compiler: Any, **kw: Any) -> str:
    (ns,) = list(element.clauses)
    col = compiler.process(ns, **kw)
    return f"CAST(strftime('%s', ({col}) / {NS}, 'unixepoch', 'start of month') AS INTEGER) * {NS}"


@compiles(month_start, "postgresql")
def _month_pg(element: month_start, compiler: Any, **kw: Any) -> str:
    (ns,) = list(element.clauses)
    col = compiler.process(ns, **kw)
    return (
        "CAST(EXTRACT(EPOCH FROM date_trunc('month', "
        f"to_timestamp(({col}) / {NS}) AT TIME ZONE 'UTC')) AS BIGINT) * {NS}"
    )


def bucket_of(time: ColumnElement[int], unit: int | str) -> ColumnElement[int]:
    if unit == MONTH or not isinstance(unit, int):
        return month_start(time)
    width = literal(unit * NS, BigInteger())
    if unit == 7 * 86_400:
        shift = literal(_WEEK_SHIFT, BigInteger())
        return ((time + shift) // width) * width - shift
    return (time // width) * width


def _number(value: Any) -> float | int | None:
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, bool):
        return int(value)
    return value if isinstance(value, (int, float)) or value is None else float(value)


def _key(values: tuple[Any, ...]) -> bytes:
    return orjson.dumps(values, default=str)


class AggregateRepository:
    def __init__(self, repo: TelemetryRepository) -> None:
        self.repo = repo

    async def aggregate(
        self,
        entity: Entity,
        plan: Plan,
        where: ColumnElement[bool] | None,
        start: int | None,
        end: int | None,
    ) -> list[dict[str, Any]]:
        """Rows of {"d0".., "b" (the bucket, ns), "v" (the value)}, in the plan's order."""
        conditions = self.repo.scoped(entity, start, end)
        if where is not None:
            conditions.append(where)
        measure = plan.measure.column if plan.measure is not None else None
        if plan.aggregation in PERCENTILES and measure is not None:
            conditions.append(measure.is_not(None))
        groups = self._groups(entity, plan)
        picked = [*groups, *([measure.label("m")] if measure is not None else [])]
        # The grouped values are computed once, in a subquery: Postgres cannot tell that an
        # expression of GROUP BY is the one of SELECT when it holds bound parameters.
        inner = select(*picked).where(*conditions)
        if plan.aggregation in PERCENTILES and self.repo.dialect != "postgresql":
            return await self._percentiles(plan, inner, conditions)
        rows = inner.subquery("rows")
        keys = [rows.c[g.key] for g in groups]
        value = self._metric(plan, rows.c.m if measure is not None else None).label("v")
        stmt = select(*keys, value)
        if keys:
            stmt = stmt.group_by(*keys)
        labels: dict[str, Any] = {k.key: k for k in keys} | {"v": value}
        ordering = []
        for clause in plan.order:
            column = labels[self._label(plan, clause.field)]
            ordering.append(column.desc() if clause.direction == "desc" else column.asc())
        stmt = stmt.order_by(*(o.nulls_last() for o in ordering)).limit(plan.limit)
        found = await self._run(stmt)
        return [{**row, "v": _number(row["v"])} for row in found]

    @staticmethod
    def _groups(entity: Entity, plan: Plan) -> list[Any]:
        groups: list[Any] = [d.column.label(f"d{i}") for i, d in enumerate(plan.dimensions)]
        if plan.unit is not None:
            groups.append(bucket_of(entity.time, plan.unit).label("b"))
        return groups

    @staticmethod
    def _label(plan: Plan, field: str) -> str:
        if field == TIME_BUCKET:
            return "b"
        if field == METRIC_VALUE:
            return "v"
        names = [d.name for d in plan.dimensions]
        return f"d{names.index(field)}"

    @staticmethod
    def _metric(plan: Plan, measure: ColumnElement[Any] | None) -> ColumnElement[Any]:
        if measure is None:
            return func.count()
        match plan.aggregation:
            case "count":
                return func.count(measure)
            case "count_distinct":
                return func.count(distinct(measure))
            case "sum":
                return func.sum(measure)
            case "avg":
                return func.avg(measure)
            case "min":
                return func.min(measure)
            case "max":
                return func.max(measure)
        fraction = PERCENTILES[plan.aggregation]
        return func.percentile_cont(fraction).within_group(measure)

    async def _run(self, stmt: Select[Any]) -> list[dict[str, Any]]:
        session = self.repo.session
        async with search_budget(session, self.repo.budget):
            return [dict(row) for row in (await session.execute(stmt)).mappings()]

    async def _percentiles(
        self, plan: Plan, inner: Select[Any], conditions: list[Any]
    ) -> list[dict[str, Any]]:
        session = self.repo.session
        counted = select(func.count()).where(*conditions)
        async with search_budget(session, self.repo.budget):
            total = int((await session.execute(counted)).scalar_one())
        if total > MAX_PERCENTILE_ROWS:
            raise bad_aggregation(
                f"a percentile over {total} values is more than this database computes "
                f"({MAX_PERCENTILE_ROWS} at most on SQLite): narrow the time range or the "
                "search expression"
            )
        found: dict[bytes, tuple[dict[str, Any], list[float]]] = {}
        async with search_budget(session, self.repo.budget):
            result = await session.stream(inner.execution_options(yield_per=10_000))
            async for row in result.mappings():
                values = {k: v for k, v in row.items() if k != "m"}
                key = _key(tuple(values.values()))
                if key not in found:
                    found[key] = (values, [])
                found[key][1].append(float(row["m"]))
        fraction = PERCENTILES[plan.aggregation]
        rows = [{**values, "v": percentile(ms, fraction)} for values, ms in found.values()]
        named = [
            {**row, **{c.field: row[self._label(plan, c.field)] for c in plan.order}}
            for row in rows
        ]
        ordered = sort_rows(named, plan.order)[: plan.limit]
        keys = [*(rows[0] if rows else {})]
        return [{k: row[k] for k in keys} for row in ordered]
