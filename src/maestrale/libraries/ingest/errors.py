"""What reading and embedding a document can fail with.

`Unreadable` is the document's fault: processing it again gives the same answer, so its
`reason` belongs in the document's error status. The `*Unavailable` errors are the server's
(a model that is not served, an engine that is overloaded or down): processing may be retried.
"""

from __future__ import annotations

from maestrale.core.errors import BadRequest, ServiceUnavailable


class Unreadable(BadRequest):
    """The document cannot be read: damaged, encrypted, of a format not read here, hostile
    (over a limit), or without any text. `reason` says which, for a person."""

    code = "document_unreadable"

    def __init__(self, reason: str) -> None:
        super().__init__(reason, param="document")
        self.reason = reason


class OcrUnavailable(ServiceUnavailable):
    """The OCR engine failed the way a busy or broken server does (retry later)."""

    code = "ocr_unavailable"


class EmbeddingUnavailable(ServiceUnavailable):
    """The embeddings model is not served, or failed the way a busy or broken server does."""

    code = "embedding_unavailable"


class EmbeddingRefused(BadRequest):
    """The embeddings model refused the document's text (a 4xx of its engine)."""

    code = "embedding_refused"
