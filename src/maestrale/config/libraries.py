"""The settings of document libraries: reading documents (`libraries.ingest`) and the
libraries API. `Settings` inherits them."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings


class LibrarySettings(BaseSettings):
    # Reading library documents (see maestrale.libraries.ingest).
    library_embedding_model: str = Field(
        default="mistral-embed",
        description="embeddings model of library documents and of the searches over them",
    )
    library_document_embedding_model: str | None = Field(
        default=None,
        description="embeddings model of the documents' chunks when it differs from the queries'"
        ' (same vectors: e.g. an e5 entry with options.prefix = "passage"); unset: the same',
    )
    library_ocr_model: str = Field(
        default="mistral-ocr-latest",
        description="local OCR model of scanned pages and images in library documents",
    )
    library_max_pages: int = Field(
        default=1000, ge=1, description="pages of a library document read at most (else unread)"
    )
    library_max_unpacked_bytes: int = Field(
        default=256 * 1024 * 1024,
        ge=1024,
        description="a DOCX (a zip) may unpack to this many bytes at most (zip bombs)",
    )
    library_max_text_chars: int = Field(
        default=20_000_000, ge=1, description="text extracted from one document at most"
    )
    library_max_elements: int = Field(
        default=500_000, ge=1, description="elements (tags) of a DOCX, HTML or Markdown at most"
    )
    library_max_ocr_pages: int = Field(
        default=300, ge=0, description="scanned pages of a library document recognised at most"
    )
    library_parse_memory_bytes: int = Field(
        default=1024 * 1024 * 1024,
        ge=64 * 1024 * 1024,
        description="address space of the"
        " process parsing one DOCX, HTML, Markdown or text document (RLIMIT_AS)",
    )
    library_parse_seconds: float = Field(
        default=120.0, gt=0, description="CPU and wall-clock time parsing one such document"
    )
    library_extract_timeout_seconds: float = Field(
        default=900.0, gt=0, description="time reading one document's text may take (OCR included)"
    )
    # The libraries API (see maestrale.libraries).
    library_max_document_bytes: int = Field(
        default=100 * 1024 * 1024, ge=1, description="largest document uploaded to a library (413)"
    )
    library_upload_text_max_bytes: int = Field(
        default=1024 * 1024,
        ge=0,
        description="a text, Markdown or HTML document up to this size has its text read during"
        " the upload (text_content at once); larger ones wait for processing; 0: never",
    )
    library_signed_url_seconds: int = Field(
        default=3600, ge=60, le=7 * 24 * 3600, description="how long a document's signed link opens"
    )
