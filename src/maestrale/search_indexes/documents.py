"""Documents into an index and out of it.

Ingesting (the SDK's `ingest_documents`, always a 200 reporting each document accepted or
rejected): every document is checked first (its fields against the schema, its size: at most
8 MiB of text and 20,000 chunks), then the chunks without a vector are embedded by the index's
model with no transaction open, then each document is written in a transaction of its own (its
chunks replace the source's previous ones, the index's counts move with them): a document is
indexed whole or not at all. A document is `content` (chunked by the libraries' chunker) or
`chunks` (the caller's, each with its locator, offsets, type, parent, metadata, chunk fields
and, for `custom` embeddings, its vector in the schema's dense_vector field)."""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlalchemy.ext.asyncio import AsyncSession

from maestrale.core.auth.principal import Tenant
from maestrale.core.clock import utcnow
from maestrale.core.errors import BadRequest
from maestrale.core.ids import new_id
from maestrale.core.uow import UnitOfWork
from maestrale.libraries.index import store
from maestrale.libraries.ingest.chunking import Chunk, chunk
from maestrale.libraries.ingest.errors import EmbeddingRefused
from maestrale.search_indexes.errors import SearchIndexNotFound
from maestrale.search_indexes.fields import FieldError, check_fields, field_error, vector_fields
from maestrale.search_indexes.lookup import document_by_source, index_by_name
from maestrale.search_indexes.repository import DocumentRepository, IndexRepository
from maestrale.search_indexes.schemas import MAX_SOURCE_ID
from maestrale.search_indexes.tables import SearchIndex, SearchIndexDocument

if TYPE_CHECKING:
    from maestrale.libraries.ingest.embedding import EngineServices

MAX_DOCUMENTS = 1_000
MAX_CONTENT_BYTES = 8 * 1024 * 1024
MAX_CHUNKS = 20_000
# What one transaction of an ingestion writes, at most (a single larger document goes alone).
GROUP_DOCUMENTS = 100
GROUP_CHUNKS = 2_000
# The longest of a chunk's own strings.
CHUNK_TEXTS = {"locator": 1_024, "chunk_type": 64, "parent_ref": 512}
MAX_OFFSET = 2**31 - 1
DOCUMENT_KEYS = frozenset({"id", "source_id", "content", "chunks", "metadata"})
CHUNK_KEYS = frozenset(
    {"content", "locator", "start_offset", "end_offset", "chunk_type", "parent_ref", "metadata"}
)


@dataclass(frozen=True, slots=True)
class Target:
    """What ingestion needs of the index, read before the embedding call."""

    id: str
    schema: dict[str, Any]
    dimension: int
    embedding: str  # mistral | custom
    model: str  # the catalog id that embeds, or `custom:<index id>`


@dataclass(slots=True)
class Prepared:
    """A document that passed the checks, ready to embed and write."""

    position: int
    source_id: str
    fields: dict[str, Any]
    chunks: list[Chunk]
    attributes: list[dict[str, Any]]
    vectors: list[list[float] | None]


def _target(row: SearchIndex) -> Target:
    embedding = str(row.config["embedding"]["type"])
    model = row.embedding_model if embedding == "mistral" else None
    return Target(
        row.id,
        row.pending_schema or row.schema,
        row.dimension,
        embedding,
        model or f"custom:{row.id}",
    )


def _size(text: str) -> int:
    return len(text) if len(text) > MAX_CONTENT_BYTES else len(text.encode("utf-8", "replace"))


def _source_id(doc: dict[str, Any], errors: list[FieldError]) -> str:
    given = [doc[k] for k in ("id", "source_id") if doc.get(k) is not None]
    if not given:
        return f"doc_{uuid.uuid4().hex}"
    value = given[0]
    if len(given) == 2 and given[0] != given[1]:
        errors.append(field_error(["source_id"], "value_error", "id and source_id differ"))
    elif not store.storable(value, MAX_SOURCE_ID):
        message = f"expected a string of 1 to {MAX_SOURCE_ID} characters, without NUL"
        errors.append(field_error(["id"], "string_type", message))
    return str(value)


def _text(value: Any, where: list[str | int], limit: int, errors: list[FieldError]) -> Any:
    if value is not None and (not isinstance(value, str) or len(value) > limit):
        errors.append(field_error(where, "string_type", f"expected a string of {limit} at most"))
    return value


def _offset(value: Any, where: list[str | int], errors: list[FieldError]) -> int | None:
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= MAX_OFFSET:
        errors.append(field_error(where, "int_type", "expected a character offset"))
        return None
    return value


def prepare(target: Target, position: int, doc: dict[str, Any]) -> Prepared | list[FieldError]:
    """The document checked against the index, or what is wrong with it."""
    errors: list[FieldError] = []
    source_id = _source_id(doc, errors)
    metadata = doc.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        errors.append(field_error(["metadata"], "dict_type", "expected an object"))
    given = {k: v for k, v in doc.items() if k not in DOCUMENT_KEYS}
    checked = check_fields(target.schema["document_fields"], given, [], target.dimension)
    errors.extend(checked.errors)
    fields = {**checked.values, **({"metadata": metadata} if metadata is not None else {})}
    content, pieces = doc.get("content"), doc.get("chunks")
    if (content is None) == (pieces is None):
        errors.append(field_error([], "value_error", "give either content or chunks"))
        return errors
    if content is not None:
        found = _from_content(target, content, errors)
    else:
        found = _from_chunks(target, pieces, errors)
    if errors or found is None:
        return errors
    chunks, attributes, vectors = found
    return Prepared(position, source_id, fields, chunks, attributes, vectors)


_Found = tuple[list[Chunk], list[dict[str, Any]], list[list[float] | None]]


def _attributes(
    start: int,
    end: int,
    *,
    locator: Any = None,
    chunk_type: Any = None,
    parent_ref: Any = None,
    metadata: Any = None,
    fields: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A context chunk's attributes (see `tables`), its own keys given their defaults."""
    return {
        "locator": locator or f"chars={start}-{end}",
        "chunk_type": chunk_type or "text",
        "parent_ref": parent_ref,
        "metadata": metadata or {},
        "fields": fields or {},
    }


def _from_content(target: Target, content: Any, errors: list[FieldError]) -> _Found | None:
    if not isinstance(content, str):
        errors.append(field_error(["content"], "string_type", "expected a string"))
        return None
    if _size(content) > MAX_CONTENT_BYTES:
        errors.append(
            field_error(["content"], "too_long", f"more than {MAX_CONTENT_BYTES} bytes (UTF-8)")
        )
        return None
    if target.embedding == "custom":
        message = "an index of custom embeddings takes chunks with their vectors"
        errors.append(field_error(["content"], "value_error", message))
        return None
    chunks = chunk([content], None)
    if not chunks:
        errors.append(field_error(["content"], "value_error", "the content has no text"))
        return None
    if len(chunks) > MAX_CHUNKS:
        errors.append(field_error(["content"], "too_long", f"more than {MAX_CHUNKS} chunks"))
        return None
    # Chunks the chunker made carry their fields' defaults (a required one has none: refused).
    values = check_fields(target.schema["chunk_fields"], {}, ["content"], target.dimension)
    errors.extend(values.errors)
    attributes = [_attributes(c.start, c.end, fields=values.values) for c in chunks]
    return chunks, attributes, [None] * len(chunks)


def _from_chunks(target: Target, pieces: Any, errors: list[FieldError]) -> _Found | None:
    if not isinstance(pieces, list) or not pieces:
        errors.append(field_error(["chunks"], "list_type", "expected a list of chunks"))
        return None
    if len(pieces) > MAX_CHUNKS:
        errors.append(field_error(["chunks"], "too_long", f"more than {MAX_CHUNKS} chunks"))
        return None
    definitions = target.schema["chunk_fields"]
    vector_field = next(iter(vector_fields(target.schema)), None)
    chunks: list[Chunk] = []
    attributes: list[dict[str, Any]] = []
    vectors: list[list[float] | None] = []
    total, end = 0, 0
    for i, piece in enumerate(pieces):
        where: list[str | int] = ["chunks", i]
        if not isinstance(piece, dict) or not isinstance(piece.get("content"), str):
            errors.append(field_error([*where, "content"], "string_type", "expected a string"))
            continue
        text = piece["content"]
        total += _size(text)
        if total > MAX_CONTENT_BYTES:
            message = f"the chunks hold more than {MAX_CONTENT_BYTES} bytes (UTF-8)"
            errors.append(field_error(["chunks"], "too_long", message))
            return None
        if not text.strip():
            errors.append(field_error([*where, "content"], "value_error", "the chunk is blank"))
        start = _offset(piece.get("start_offset"), [*where, "start_offset"], errors)
        start = end if start is None else start
        stop = _offset(piece.get("end_offset"), [*where, "end_offset"], errors)
        stop = start + len(text) if stop is None else stop
        if stop < start:
            errors.append(field_error([*where, "end_offset"], "value_error", "before the start"))
        end = stop
        meta = piece.get("metadata")
        if meta is not None and not isinstance(meta, dict):
            errors.append(field_error([*where, "metadata"], "dict_type", "expected an object"))
        own = {
            key: _text(piece.get(key), [*where, key], limit, errors)
            for key, limit in CHUNK_TEXTS.items()
        }
        given = {k: v for k, v in piece.items() if k not in CHUNK_KEYS}
        checked = check_fields(definitions, given, where, target.dimension)
        errors.extend(checked.errors)
        if target.embedding == "custom" and vector_field and given.get(vector_field) is None:
            message = "custom embeddings: every chunk carries its vector"
            errors.append(field_error([*where, vector_field], "missing", message))
        chunks.append(Chunk(i, 1, start, stop, text))
        attributes.append(_attributes(start, stop, **own, metadata=meta, fields=checked.values))
        vectors.append(checked.vector)
    return chunks, attributes, vectors


async def _embed_all(
    services: EngineServices, target: Target, ready: list[Prepared]
) -> dict[int, list[FieldError]]:
    """Fill in the vectors the documents lack (no transaction is open); the documents the
    model refused, by position, with why."""
    from maestrale.libraries.ingest.embedding import embed  # numpy: on first use

    wanting = [(doc, i) for doc in ready for i, v in enumerate(doc.vectors) if v is None]
    if not wanting:
        return {}
    try:
        embedded = await embed(
            services, [doc.chunks[i].text for doc, i in wanting], model_name=target.model
        )
    except EmbeddingRefused:
        if len(ready) == 1:
            raise
        refused: dict[int, list[FieldError]] = {}
        for doc in ready:  # one by one, to tell which documents the model refuses
            try:
                refused.update(await _embed_all(services, target, [doc]))
            except EmbeddingRefused as exc:
                refused[doc.position] = [field_error(["content"], "embedding_refused", exc.message)]
        return refused
    if embedded.vectors.shape[1] != target.dimension:
        raise EmbeddingRefused(
            f"the model {target.model!r} now embeds in {embedded.vectors.shape[1]} dimensions, "
            f"not the index's {target.dimension}"
        )
    for (doc, i), row in zip(wanting, embedded.vectors.tolist(), strict=True):
        doc.vectors[i] = row
    return {}


async def ingest(
    work: UnitOfWork,
    tenant: Tenant,
    services: EngineServices,
    index_name: str,
    documents: list[dict[str, Any]],
) -> dict[str, Any]:
    """Check, embed and write `documents`: the SDK's `IngestDocumentsResponse`."""
    if len(documents) > MAX_DOCUMENTS:
        raise BadRequest(
            f"at most {MAX_DOCUMENTS} documents per request", code="too_many_documents"
        )
    target = _target(await index_by_name(work.session, tenant, index_name))
    await work.release()
    # Chunking megabytes is CPU work: off the event loop (a second for 8 MiB of text).
    checked = await asyncio.to_thread(
        lambda: [prepare(target, position, doc) for position, doc in enumerate(documents)]
    )
    results: dict[int, dict[str, Any]] = {}
    ready: list[Prepared] = []
    for position, prepared in enumerate(checked):
        if isinstance(prepared, Prepared):
            ready.append(prepared)
        else:
            results[position] = _rejected(position, prepared)
    try:
        refused = await _embed_all(services, target, ready)
    except EmbeddingRefused as exc:  # the one document left
        refused = {ready[0].position: [field_error(["content"], "embedding_refused", exc.message)]}
    for position, errors in refused.items():
        results[position] = _rejected(position, errors)
    for group in _groups([one for one in ready if one.position not in refused]):
        for one in group:
            results[one.position] = await _write(work.session, tenant, target, one)
        # Whole documents per transaction, a few together: a commit each would cost more than
        # the writing (SQLite syncs at every commit); none is ever half in.
        await work.release()
    ordered = [results[i] for i in sorted(results)]
    accepted = sum(1 for r in ordered if r["status"] == "accepted")
    return {"accepted": accepted, "rejected": len(ordered) - accepted, "results": ordered}


def _groups(documents: list[Prepared]) -> list[list[Prepared]]:
    """`documents` in runs of at most `GROUP_DOCUMENTS` documents and, past the first of a run,
    `GROUP_CHUNKS` chunks: what one transaction writes."""
    groups: list[list[Prepared]] = []
    chunks = 0
    for doc in documents:
        if (
            not groups
            or len(groups[-1]) >= GROUP_DOCUMENTS
            or chunks + len(doc.chunks) > GROUP_CHUNKS
        ):
            groups.append([])
            chunks = 0
        groups[-1].append(doc)
        chunks += len(doc.chunks)
    return groups


def _rejected(position: int, errors: list[FieldError]) -> dict[str, Any]:
    return {"status": "rejected", "position": position, "errors": errors}


async def _write(
    session: AsyncSession, tenant: Tenant, target: Target, doc: Prepared
) -> dict[str, Any]:
    """One document in (its source's previous chunks out), with the index's counts."""
    index = await IndexRepository(session, tenant).locked(target.id)
    if index is None or index.status in ("deleting", "failed"):
        error = field_error([], "index_not_ready", "the index was deleted meanwhile")
        return _rejected(doc.position, [error])
    documents = DocumentRepository(session, tenant, index.id)
    now = utcnow()
    row = await document_by_source(session, index, doc.source_id)
    new = row is None
    if row is None:
        row = SearchIndexDocument(
            id=new_id(),
            index_id=index.id,
            source_id=doc.source_id,
            fields={},
            chunk_count=0,
            length=0,
            created_at=now,
            modified_at=now,
        )
        if not await documents.add_unique(row):  # another request wrote it first
            new, row = False, await document_by_source(session, index, doc.source_id)
            if row is None:
                raise RuntimeError(f"document {doc.source_id!r} neither added nor found")
    before = 0 if new else row.chunk_count
    row.fields = doc.fields
    row.chunk_count = len(doc.chunks)
    row.length = max(c.end for c in doc.chunks)
    row.modified_at = now
    await store.replace_document(
        session,
        organization_id=index.organization_id,
        workspace_id=index.workspace_id,
        library_id=index.id,
        document_id=row.id,
        chunks=doc.chunks,
        vectors=doc.vectors,
        model=target.model,
        attributes=doc.attributes,
    )
    await IndexRepository(session, tenant).counted(
        index.id, 1 if new else 0, len(doc.chunks) - before
    )
    return {
        "status": "accepted",
        "position": doc.position,
        "document_id": doc.source_id,
        "chunk_count": len(doc.chunks),
    }


async def delete_documents(
    session: AsyncSession, tenant: Tenant, index_name: str, source_ids: list[str]
) -> dict[str, Any]:
    """Take the documents out (their chunks with them): the SDK's `DeleteDocumentsResponse`."""
    found_index = await index_by_name(session, tenant, index_name)
    index = await IndexRepository(session, tenant).locked(found_index.id)
    if index is None or index.status == "deleting":
        raise SearchIndexNotFound(f"no search index {index_name!r}", param="index_name")
    wanted = list(dict.fromkeys(source_ids))
    documents = DocumentRepository(session, tenant, index.id)
    found = {row.source_id: row for row in await documents.by_sources(wanted)}
    chunks = 0
    for row in found.values():
        await store.delete_document(session, index.id, row.id)
        chunks += row.chunk_count
        await documents.delete(row)
    if found:
        await IndexRepository(session, tenant).counted(index.id, -len(found), -chunks)
    return {
        "deleted_document_ids": [s for s in wanted if s in found],
        "missing": [s for s in wanted if s not in found],
    }
