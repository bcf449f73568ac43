"""The chunks of an index as the reading routes see them: a library chunk of the index, its
document's source id and fields, and its attributes; their reads (by id, by offsets within a
source, in reading order) and their wire shape.

Every read is scoped twice: to the index (`library_id`) and, through the document, to the
index's workspace."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, Select, and_, select
from sqlalchemy.ext.asyncio import AsyncSession

from maestrale.libraries.index.store import storable
from maestrale.libraries.index.tables import LibraryChunk
from maestrale.search_indexes.retrieval.filters import METADATA_PREFIX, MISSING, SYSTEM_FIELDS
from maestrale.search_indexes.tables import SearchIndex, SearchIndexDocument

C = LibraryChunk
D = SearchIndexDocument
# Ids per `IN (...)`: well under both drivers' parameter limits.
BATCH = 500
INT64_MAX = 2**63 - 1
SOURCE_ID_LENGTH = 512
CONTENT = "content"


@dataclass(frozen=True, slots=True)
class IndexView:
    """What retrieval needs of an index, read before any remote call (the row itself expires
    when the transaction ends)."""

    id: str
    workspace_id: str
    name: str
    embedding_model: str | None
    dimension: int
    schema: dict[str, Any]

    @classmethod
    def of(cls, index: SearchIndex) -> IndexView:
        return cls(
            index.id,
            index.workspace_id,
            index.name,
            index.embedding_model,
            index.dimension,
            dict(index.schema or {}),
        )

    @property
    def model(self) -> str:
        """The `model` its chunks are stored under."""
        return self.embedding_model or f"custom:{self.id}"

    def chunk_field_type(self, name: str) -> str | None:
        fields = self.schema.get("chunk_fields") or {}
        definition = fields.get(name) if isinstance(fields, dict) else None
        kind = definition.get("type") if isinstance(definition, dict) else None
        return kind if isinstance(kind, str) else None


@dataclass(frozen=True, slots=True)
class ContextChunk:
    id: int
    source_id: str
    start: int
    end: int
    text: str
    attributes: dict[str, Any]
    document_fields: dict[str, Any]
    vector: bytes | None = None

    @property
    def fields(self) -> dict[str, Any]:
        found = self.attributes.get("fields")
        return found if isinstance(found, dict) else {}

    @property
    def metadata(self) -> dict[str, Any]:
        found = self.attributes.get("metadata")
        return found if isinstance(found, dict) else {}

    def content(self, content_type: str = CONTENT) -> str:
        """The chunk's text, or the text of its chunk field `content_type` ("" without one)."""
        if content_type == CONTENT:
            return self.text
        found = self.fields.get(content_type)
        return found if isinstance(found, str) else ""

    def system(self, name: str) -> Any:
        if name == "id":
            return str(self.id)
        if name == "source_id":
            return self.source_id
        if name == "locator":
            return self.attributes.get("locator") or f"chars={self.start}-{self.end}"
        if name == "chunk_type":
            return self.attributes.get("chunk_type") or "text"
        return self.attributes.get("parent_ref")

    def lookup(self, name: str) -> Any:
        """The value of a filter's field (see `filters`)."""
        if name in SYSTEM_FIELDS:
            return self.system(name)
        if name in self.fields:
            return self.fields[name]
        key = name.removeprefix(METADATA_PREFIX)
        if key != name and key in self.metadata:
            return self.metadata[key]
        return self.document_fields.get(name, MISSING)

    def wire(self, content_type: str = CONTENT) -> dict[str, Any]:
        """The SDK's SearchChunkResponse / NavigationChunkResponse."""
        return {
            **self.fields,
            "id": str(self.id),
            "source_id": self.source_id,
            "locator": self.system("locator"),
            "start_offset": self.start,
            "end_offset": self.end,
            "chunk_type": self.system("chunk_type"),
            "content": self.content(content_type),
            "parent_ref": self.system("parent_ref"),
            "metadata": self.metadata,
        }


def _select(index: IndexView, *, vectors: bool = False) -> Select[Any]:
    columns: list[Any] = [
        C.id,
        D.source_id,
        C.start_offset,
        C.end_offset,
        C.text,
        C.attributes,
        D.fields,
    ]
    if vectors:
        columns.append(C.vector)
    return (
        select(*columns)
        .join(D, D.id == C.document_id)
        .where(
            C.library_id == index.id,
            D.index_id == index.id,
            D.workspace_id == index.workspace_id,
        )
    )


def _chunk(row: Any) -> ContextChunk:
    return ContextChunk(
        int(row[0]),
        row[1],
        int(row[2]),
        int(row[3]),
        row[4],
        row[5] if isinstance(row[5], dict) else {},
        row[6] if isinstance(row[6], dict) else {},
        bytes(row[7]) if len(row) > 7 else None,
    )


class ChunkReader:
    """Reads of the chunks of one index."""

    def __init__(self, session: AsyncSession, index: IndexView) -> None:
        self.session = session
        self.index = index

    async def by_ids(self, ids: Iterable[int], *, vectors: bool = False) -> dict[int, ContextChunk]:
        """The chunks of these ids that are the index's, by id."""
        wanted = [i for i in dict.fromkeys(ids) if 0 < i <= INT64_MAX]
        found: dict[int, ContextChunk] = {}
        for start in range(0, len(wanted), BATCH):
            part = wanted[start : start + BATCH]
            rows = await self.session.execute(
                _select(self.index, vectors=vectors).where(C.id.in_(part))
            )
            found.update((chunk.id, chunk) for chunk in map(_chunk, rows))
        return found

    async def document(self, source_id: str) -> SearchIndexDocument | None:
        """The index's document of `source_id` (None for one no column could hold)."""
        if not storable(source_id, SOURCE_ID_LENGTH):
            return None
        found = await self.session.execute(
            select(D).where(
                D.index_id == self.index.id,
                D.workspace_id == self.index.workspace_id,
                D.source_id == source_id,
            )
        )
        return found.scalar_one_or_none()

    async def has_chunks(self, document: SearchIndexDocument) -> bool:
        found = await self.session.execute(
            select(C.id).where(C.library_id == self.index.id, C.document_id == document.id).limit(1)
        )
        return found.first() is not None

    async def in_source(
        self,
        document: SearchIndexDocument,
        *conditions: ColumnElement[bool],
        order: Sequence[Any] = (),
        limit: int,
    ) -> list[ContextChunk]:
        """Up to `limit` chunks of the document meeting `conditions`, in `order` (reading
        order unless told)."""
        statement = (
            _select(self.index)
            .where(C.document_id == document.id, and_(True, *conditions))
            .order_by(*(order or (C.start_offset, C.id)))
            .limit(limit)
        )
        return [_chunk(row) for row in await self.session.execute(statement)]
