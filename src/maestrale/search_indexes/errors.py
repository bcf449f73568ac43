"""The search indexes' errors: each a status and a stable code."""

from __future__ import annotations

from maestrale.core.errors import BadRequest, Conflict, NotFound


class SearchIndexNotFound(NotFound):
    """No index of that name in the caller's workspace (or it is gone)."""

    code = "index_not_found"


class SourceNotFound(NotFound):
    """The index has no chunk of that source (the SDK: a 404 means the source has no chunks)."""

    code = "source_not_found"


class ChunkNotFound(NotFound):
    code = "chunk_not_found"


class SummaryNotFound(NotFound):
    code = "summary_not_found"


class IndexNotReady(Conflict):
    """The index is provisioning, failed or being deleted: it cannot take this request."""

    code = "index_not_ready"


class NameTaken(Conflict):
    code = "name_taken"


class InvalidSchema(BadRequest):
    code = "invalid_schema"


class InvalidRetriever(BadRequest):
    code = "invalid_retriever"
