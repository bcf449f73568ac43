"""The searchable fields of an entity (the SDK's OtelFieldDefinition) and a field's options."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from maestrale.observability.errors import ObservabilityError
from maestrale.observability.traces.fields_repository import FieldOptionsRepository
from maestrale.observability.traces.service import Window
from maestrale.telemetry.search.compile import resolve_field
from maestrale.telemetry.search.errors import SearchError
from maestrale.telemetry.search.fields import definition, has_options
from maestrale.telemetry.search.model import Entity


def definitions(entity: Entity) -> dict[str, Any]:
    return {"field_definitions": [definition(f) for f in entity.fields.values()]}


class FieldOptions:
    def __init__(self, repo: FieldOptionsRepository) -> None:
        self.repo = repo

    async def options(
        self, entity: Entity, field_name: str, start: datetime | None, end: datetime | None
    ) -> dict[str, Any]:
        """An ENUM or TEXT field's values (or a map key's, named `span_attributes['k']`), the
        most recently seen first; null for a field whose values make no list (numbers, times,
        arrays, maps, long text). An unknown field is a 404."""
        try:
            field = resolve_field(entity, field_name)
        except SearchError as exc:
            raise ObservabilityError(exc.message, "FIELDS_NOT_FOUND", status_code=404) from exc
        window = Window.of(start, end)
        if field.type == "BOOL":
            return {"options": ["true", "false"]}
        if not has_options(field):
            return {"options": None}
        return {"options": await self.repo.options(entity, field, window.start, window.end)}
