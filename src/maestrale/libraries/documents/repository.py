"""SQL of documents. A caller reaches documents through a library it may read (the service
checks that first), so reads are scoped to that library; background jobs read them in the
job's workspace (`WorkspaceDocuments`). Expired documents are hidden until their removal."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import ColumnElement, and_, delete, func, or_, select, type_coerce, update
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.ext.asyncio import AsyncSession

from maestrale.core.jobs.tables import Job
from maestrale.core.repository import WorkspaceRepository
from maestrale.libraries.errors import InvalidDocumentQuery
from maestrale.libraries.repository import contains, document_live
from maestrale.libraries.tables import LibraryDocument

SORTS = {
    "created_at": LibraryDocument.created_at,
    "updated_at": LibraryDocument.updated_at,
    "last_processed_at": LibraryDocument.last_processed_at,
    "name": LibraryDocument.name,
    "size": LibraryDocument.size,
}
MAX_FILTERS = 20
MAX_FILTER_VALUES = 100
# Attribute names a filter may name: they become a JSON path on SQLite.
_FILTER_KEY = re.compile(r"^[A-Za-z0-9_.:@ -]{1,128}$")


def _equals(key: str, value: Any, postgres: bool) -> ColumnElement[bool]:
    """The attribute `key` is `value` (of the same JSON type: a text "1" is not the number 1)."""
    if isinstance(value, list) or not isinstance(value, (bool, int, float, str)):
        raise InvalidDocumentQuery(
            f"filters_attributes: the value of {key!r} must be a string, a number, a boolean "
            "or a list of them",
            param="filters_attributes",
        )
    if postgres:
        contained: ColumnElement[bool] = type_coerce(LibraryDocument.attributes, JSONB).contains(
            {key: value}
        )
        return contained
    path = f'$."{key}"'
    kind = func.json_type(LibraryDocument.attributes, path)
    if isinstance(value, bool):
        return kind == ("true" if value else "false")
    extracted = func.json_extract(LibraryDocument.attributes, path)
    if isinstance(value, str):
        return and_(kind == "text", extracted == value)
    return and_(kind.in_(["integer", "real"]), extracted == value)


def attribute_filters(filters: Mapping[str, Any], *, postgres: bool) -> list[ColumnElement[bool]]:
    """`{name: value}` → the attribute equals the value; `{name: [values]}` → any of them."""
    if len(filters) > MAX_FILTERS:
        raise InvalidDocumentQuery(
            f"filters_attributes: at most {MAX_FILTERS} attributes", param="filters_attributes"
        )
    conditions = []
    for key, value in filters.items():
        if not _FILTER_KEY.match(key):
            raise InvalidDocumentQuery(
                f"filters_attributes: {key[:64]!r} is not an attribute name this filter takes "
                "(letters, digits, spaces and _ . : @ -, at most 128)",
                param="filters_attributes",
            )
        values = value if isinstance(value, list) else [value]
        if not values or len(values) > MAX_FILTER_VALUES:
            raise InvalidDocumentQuery(
                f"filters_attributes: {key!r} needs 1 to {MAX_FILTER_VALUES} values",
                param="filters_attributes",
            )
        conditions.append(or_(*(_equals(key, item, postgres) for item in values)))
    return conditions


class DocumentRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def get(self, library_id: str, document_id: str) -> LibraryDocument | None:
        found = await self.session.execute(
            select(LibraryDocument).where(
                LibraryDocument.id == document_id,
                LibraryDocument.library_id == library_id,
                document_live(),
            )
        )
        return found.scalar_one_or_none()

    async def page(
        self,
        library_id: str,
        *,
        search: str | None,
        filters: Mapping[str, Any],
        sort_by: str,
        descending: bool,
        offset: int,
        limit: int,
    ) -> tuple[list[LibraryDocument], int]:
        column = SORTS[sort_by]
        stmt = select(LibraryDocument).where(
            LibraryDocument.library_id == library_id, document_live()
        )
        if search:
            stmt = stmt.where(contains(LibraryDocument.name, search))
        postgres = self.session.get_bind().dialect.name == "postgresql"
        stmt = stmt.where(*attribute_filters(filters, postgres=postgres))
        counted = select(func.count()).select_from(stmt.subquery())
        total = int((await self.session.execute(counted)).scalar_one())
        order: list[ColumnElement[Any]] = (
            [column.desc().nulls_last(), LibraryDocument.id.desc()]
            if descending
            else [column.asc().nulls_last(), LibraryDocument.id.asc()]
        )
        rows = await self.session.execute(stmt.order_by(*order).offset(offset).limit(limit))
        return list(rows.scalars()), total

    async def add(self, row: LibraryDocument) -> LibraryDocument:
        self.session.add(row)
        await self.session.flush()
        return row

    async def flush(self) -> None:
        await self.session.flush()

    async def delete(self, document_id: str) -> tuple[int, list[str]] | None:
        """Delete the document's row: its size and blob keys, or None if it was gone."""
        removed = await self.session.execute(
            delete(LibraryDocument)
            .where(LibraryDocument.id == document_id)
            .returning(LibraryDocument.size, LibraryDocument.blob_key, LibraryDocument.text_key)
            .execution_options(synchronize_session=False)
        )
        row = removed.first()
        if row is None:
            return None
        size, *keys = row
        return int(size), [key for key in keys if key]

    async def ended_jobs(self, job_ids: Sequence[str]) -> dict[str, str]:
        """`{job id: its last error}` of those jobs that ended without succeeding (failed,
        cancelled) or no longer exist."""
        wanted = list(dict.fromkeys(job_ids))
        if not wanted:
            return {}
        found = await self.session.execute(
            select(Job.id, Job.status, Job.last_error).where(Job.id.in_(wanted))
        )
        states = {job_id: (status, error) for job_id, status, error in found.all()}
        ended: dict[str, str] = {}
        for job_id in wanted:
            status, error = states.get(job_id, ("gone", None))
            if status in ("failed", "cancelled", "gone"):
                ended[job_id] = error or f"the processing job is {status}"
        return ended


class WorkspaceDocuments(WorkspaceRepository[LibraryDocument]):
    """The documents of one workspace as its background jobs see them (expired ones too)."""

    model = LibraryDocument

    async def claim(self, document_id: str, generation: int, **values: Any) -> bool:
        """Set `values` on the document if it still exists at `generation` (False otherwise).
        The first write of a transaction: it takes the document's row."""
        changed = await self.session.execute(
            update(LibraryDocument)
            .where(
                LibraryDocument.id == document_id,
                LibraryDocument.workspace_id == self.tenant.workspace_id,
                LibraryDocument.generation == generation,
            )
            .values(**values)
            .returning(LibraryDocument.id)
            .execution_options(synchronize_session=False)
        )
        return changed.first() is not None

    async def current(self, document_id: str) -> LibraryDocument | None:
        found = await self.session.execute(
            self.select()
            .where(LibraryDocument.id == document_id)
            .execution_options(populate_existing=True)
        )
        return found.scalar_one_or_none()
