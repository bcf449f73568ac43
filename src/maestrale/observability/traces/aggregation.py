"""What an aggregation request means over an entity, before any SQL runs: its measure and
dimensions resolved to fields (a MAP key too: `span_attributes['k']` or `span_attributes.k`),
the aggregation checked against the field's, the time buckets' width, and the percentile that
SQLite computes in Python (linear interpolation, as Postgres' percentile_cont)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement

from maestrale.observability.errors import ObservabilityError
from maestrale.observability.traces.schemas import AggregationRequest, OrderByClause
from maestrale.telemetry.search.jsonvalue import check_key, json_scalar
from maestrale.telemetry.search.model import Entity

NS = 1_000_000_000
UNITS = {"second": 1, "minute": 60, "hour": 3600, "day": 86_400, "week": 7 * 86_400}
MONTH = "month"
# "auto" picks the finest unit that cuts the range into at most this many buckets.
AUTO_BUCKETS = 200
PERCENTILES = {"p50": 0.5, "p90": 0.9, "p95": 0.95, "p99": 0.99}
# Names order_by may use for the bucket and the metric (besides the metric's own name).
TIME_BUCKET = "time_bucket"
METRIC_VALUE = "metric_value"

_BRACKET = re.compile(r"^(\w+)\['((?:[^'\\]|\\.)*)'\]$")
_DOTTED = re.compile(r"^(\w+)\.(?:`([^`]+)`|(.+))$")


def bad_aggregation(message: str) -> ObservabilityError:
    return ObservabilityError(message, "SEARCH_BAD_REQUEST")


@dataclass(frozen=True, slots=True)
class Resolved:
    name: str
    column: ColumnElement[Any]
    aggregations: tuple[str, ...]


def resolve(entity: Entity, name: str) -> Resolved:
    """A field of `entity` by name, or a key of one of its maps."""
    field = entity.fields.get(name)
    if field is not None:
        return Resolved(name, field.column, field.aggregations)
    match = _BRACKET.match(name)
    if match is not None:
        map_name, key = match.group(1), re.sub(r"\\(.)", r"\1", match.group(2))
    else:
        dotted = _DOTTED.match(name)
        if dotted is None or dotted.group(1) not in entity.maps:
            raise bad_aggregation(f"unknown field {name!r} of {entity.name}")
        map_name, key = dotted.group(1), dotted.group(2) or dotted.group(3)
    if map_name not in entity.maps:
        raise bad_aggregation(f"unknown field {name!r} of {entity.name}")
    why = check_key(key)
    if why is not None:
        raise bad_aggregation(f"{name!r}: {why}")
    column: ColumnElement[Any] = json_scalar(entity.maps[map_name], key)
    return Resolved(name, column, entity.fields[map_name].aggregations)


@dataclass(frozen=True, slots=True)
class Plan:
    """A checked request: the measure (None: count of rows, `*`), the dimensions, the bucket
    width (seconds; MONTH for calendar months; None: no time dimension) and the order."""

    metric_name: str
    aggregation: str
    measure: Resolved | None
    dimensions: list[Resolved]
    unit: int | str | None
    order: list[OrderByClause]
    limit: int

    @property
    def granularity_seconds(self) -> int | None:
        return self.unit if isinstance(self.unit, int) else None


def plan(entity: Entity, request: AggregationRequest, start: int, end: int) -> Plan:
    metric = request.metric
    if metric.measure == "*" and metric.aggregation == "count":
        measure = None
    else:
        measure = resolve(entity, metric.measure)
        if metric.aggregation not in measure.aggregations:
            allowed = ", ".join(measure.aggregations) or "none"
            raise bad_aggregation(
                f"{metric.measure!r} cannot be aggregated with {metric.aggregation!r} "
                f"(its aggregations: {allowed})"
            )
    names = list(dict.fromkeys(request.dimensions))
    dimensions = [resolve(entity, name) for name in names]
    unit = None
    if request.time_dimension is not None:
        unit = granularity(request.time_dimension.granularity or "auto", start, end)
    metric_name = f"{metric.aggregation}({metric.measure})"
    known = {*names, METRIC_VALUE, metric_name, *([TIME_BUCKET] if unit is not None else [])}
    for clause in request.order_by or ():
        if clause.field not in known:
            raise bad_aggregation(
                f"cannot order by {clause.field!r}: order by a dimension, "
                f"{TIME_BUCKET!r} (with a time dimension) or {METRIC_VALUE!r}"
            )
    order = list(request.order_by or ())
    if not order:
        if unit is not None:
            order = [OrderByClause(field=TIME_BUCKET)]
        else:
            order = [OrderByClause(field=METRIC_VALUE, direction="desc")]
    # Ties broken by the dimensions, the same on both databases.
    order += [OrderByClause(field=n) for n in names if n not in {c.field for c in order}]
    if unit is not None and TIME_BUCKET not in {c.field for c in order}:
        order.append(OrderByClause(field=TIME_BUCKET))
    order = [
        OrderByClause(field=METRIC_VALUE, direction=c.direction) if c.field == metric_name else c
        for c in order
    ]
    return Plan(metric_name, metric.aggregation, measure, dimensions, unit, order, request.limit)


def granularity(name: str, start: int, end: int) -> int | str:
    if name != "auto":
        return UNITS.get(name, MONTH)
    span = max(end - start, 0)
    for seconds in UNITS.values():
        if span <= AUTO_BUCKETS * seconds * NS:
            return seconds
    return MONTH


def percentile(values: list[float], fraction: float) -> float | None:
    """percentile_cont: the value at `fraction` of the sorted values, interpolated linearly."""
    if not values:
        return None
    ordered = sorted(values)
    position = fraction * (len(ordered) - 1)
    low, high = math.floor(position), math.ceil(position)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def sort_rows(rows: list[dict[str, Any]], order: list[OrderByClause]) -> list[dict[str, Any]]:
    """Rows ({field: value}) in `order`, nulls last either way (as the SQL path orders them)."""
    for clause in reversed(order):
        present = [r for r in rows if r.get(clause.field) is not None]
        absent = [r for r in rows if r.get(clause.field) is None]
        present.sort(key=lambda r: _sortable(r[clause.field]), reverse=clause.direction == "desc")
        rows = present + absent
    return rows


def _sortable(value: Any) -> Any:
    return (0, value, "") if isinstance(value, (int, float)) else (1, 0, str(value))
