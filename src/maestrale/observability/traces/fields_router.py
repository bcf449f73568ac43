"""The searchable fields of traces, spans and logs (the SDK's OtelFieldDefinition: type,
operators of the search expression, aggregations), and the values a field takes in the
workspace (its options)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from fastapi import Depends, Query

from maestrale.config.dependencies import AppSettings
from maestrale.core.auth.dependencies import CurrentTenant
from maestrale.core.routing import Work
from maestrale.observability.errors import observability_router
from maestrale.observability.traces.fields_repository import FieldOptionsRepository
from maestrale.observability.traces.fields_service import FieldOptions, definitions
from maestrale.telemetry.search.entities import LOGS, SPANS, TRACES
from maestrale.telemetry.search.model import Entity

router = observability_router(prefix="/observability", tags=["observability"])

From = Annotated[datetime | None, Query(alias="from", description="start time, included")]
To = Annotated[datetime | None, Query(description="end time, excluded")]


def _options(work: Work, tenant: CurrentTenant, settings: AppSettings) -> FieldOptions:
    budget = settings.observability_search_timeout
    return FieldOptions(FieldOptionsRepository(work.session, tenant, budget=budget))


Options = Annotated[FieldOptions, Depends(_options)]


def _add_routes(entity: Entity, noun: str) -> None:
    """GET /{entity}/fields and /{entity}/fields/{field_name}/options."""

    async def fields(_: CurrentTenant) -> dict[str, Any]:
        return definitions(entity)

    async def options(
        field_name: str, options: Options, from_: From = None, to: To = None
    ) -> dict[str, Any]:
        return await options.options(entity, field_name, from_, to)

    fields.__doc__ = f"The fields a {noun} search expression and aggregation may name."
    options.__doc__ = (
        f"The values a {noun} field takes in the workspace within `from` and `to`, the most "
        "recently seen first (at most 100; null for a field whose values make no list)."
    )
    router.add_api_route(f"/{entity.name}/fields", fields, methods=["GET"], name=f"{noun}_fields")
    router.add_api_route(
        f"/{entity.name}/fields/{{field_name}}/options",
        options,
        methods=["GET"],
        name=f"{noun}_field_options",
    )


for _entity, _noun in ((TRACES, "trace"), (SPANS, "span"), (LOGS, "log")):
    _add_routes(_entity, _noun)
