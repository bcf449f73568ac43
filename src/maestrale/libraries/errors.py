"""The errors of the libraries group, each with its stable code."""

from __future__ import annotations

from maestrale.core.errors import BadRequest, Conflict, Forbidden, NotFound


class LibraryNotFound(NotFound):
    code = "library_not_found"

    def __init__(self, library_id: str) -> None:
        super().__init__(f"library {library_id[:200]!r} not found", param="library_id")


class DocumentNotFound(NotFound):
    code = "document_not_found"

    def __init__(self, document_id: str) -> None:
        super().__init__(f"document {document_id[:200]!r} not found", param="document_id")


class LibraryForbidden(Forbidden):
    """The caller sees the library but its role does not allow the action."""

    code = "library_access_denied"


class DocumentNotProcessed(Conflict):
    code = "document_not_processed"


class InvalidSharing(BadRequest):
    code = "invalid_sharing"


class SharingNotFound(NotFound):
    code = "sharing_not_found"


class InvalidDocumentQuery(BadRequest):
    code = "invalid_document_query"
