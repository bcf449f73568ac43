"""Wire models of documents (the SDK's Document, ListDocumentsResponse, UpdateDocumentRequest,
ProcessingStatus, DocumentTextContent)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

import orjson
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
)

from maestrale.core.clock import as_utc
from maestrale.libraries.schemas import MAX_NAME_CHARS, CleanText, PaginationInfo
from maestrale.libraries.tables import LibraryDocument

# What a document's attributes may hold: a handful of flat values, not a second document.
MAX_ATTRIBUTES = 100
MAX_ATTRIBUTE_KEY_CHARS = 256
MAX_ATTRIBUTE_LIST_ITEMS = 1000
MAX_ATTRIBUTES_BYTES = 64 * 1024

# A datetime arrives as its ISO text: it is kept as sent.
AttributeValue = (
    StrictBool
    | StrictInt
    | StrictFloat
    | StrictStr
    | list[StrictStr]
    | list[StrictInt]
    | list[StrictFloat]
    | list[StrictBool]
)


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [item for item in value if isinstance(item, str)]
    return []


def _bounded(attributes: Any) -> Any:
    """Refuse what is too big before each value is validated (a million keys would cost
    seconds of the event loop first)."""
    if not isinstance(attributes, dict):
        return attributes  # null, or what the type check refuses
    if len(attributes) > MAX_ATTRIBUTES:
        raise ValueError(f"at most {MAX_ATTRIBUTES} attributes, not {len(attributes)}")
    for key, value in attributes.items():
        if not isinstance(key, str) or not key or len(key) > MAX_ATTRIBUTE_KEY_CHARS:
            raise ValueError(f"attribute names have 1 to {MAX_ATTRIBUTE_KEY_CHARS} characters")
        if isinstance(value, list) and len(value) > MAX_ATTRIBUTE_LIST_ITEMS:
            raise ValueError(
                f"attribute {key[:64]!r} has more than {MAX_ATTRIBUTE_LIST_ITEMS} items"
            )
        if any("\x00" in text for text in (key, *_strings(value))):
            raise ValueError("attributes must not contain NUL characters")
    try:
        size = len(orjson.dumps(attributes))
    except TypeError as exc:
        raise ValueError("attributes must be JSON values") from exc
    if size > MAX_ATTRIBUTES_BYTES:
        raise ValueError(f"attributes take {size} bytes as JSON, more than {MAX_ATTRIBUTES_BYTES}")
    return attributes


Attributes = Annotated[dict[str, AttributeValue] | None, BeforeValidator(_bounded)]


def _utc(value: datetime | None) -> datetime | None:
    """An aware UTC datetime (one without a zone is taken as UTC)."""
    if value is None:
        return None
    try:
        return as_utc(value)
    except (OverflowError, ValueError) as exc:
        raise ValueError("the date is out of range") from exc


UtcDateTime = Annotated[datetime | None, AfterValidator(_utc)]


class DocumentUpdate(BaseModel):
    """Only the fields sent change; `attributes: null` and `expires_at: null` clear them. A
    document whose `expires_at` passes is deleted."""

    model_config = ConfigDict(extra="ignore")

    name: CleanText | None = Field(default=None, min_length=1, max_length=MAX_NAME_CHARS)
    attributes: Attributes = None
    expires_at: UtcDateTime = None


class DocumentOut(BaseModel):
    id: str
    library_id: str
    hash: str | None
    mime_type: str | None
    extension: str | None
    size: int | None
    name: str
    created_at: datetime
    process_status: str
    uploaded_by_id: str | None
    uploaded_by_type: str
    processing_status: str
    tokens_processing_total: int
    summary: str | None = None
    last_processed_at: datetime | None = None
    number_of_pages: int | None = None
    tokens_processing_main_content: int | None = None
    tokens_processing_summary: int | None = None
    url: str | None = None
    attributes: dict[str, Any] | None = None
    expires_at: datetime | None = None

    @classmethod
    def of(cls, row: LibraryDocument, state: tuple[str, str] | None = None) -> DocumentOut:
        """The document; `state` overrides its (process_status, processing_status)."""
        process_status, processing_status = state or (row.process_status, row.processing_status)
        return cls(
            id=row.id,
            library_id=row.library_id,
            hash=row.hash,
            mime_type=row.mime_type,
            extension=row.extension,
            size=row.size,
            name=row.name,
            created_at=row.created_at,
            process_status=process_status,
            uploaded_by_id=row.uploaded_by_id,
            uploaded_by_type=row.uploaded_by_type,
            processing_status=processing_status,
            tokens_processing_total=row.tokens_processing_total,
            summary=row.summary,
            last_processed_at=row.last_processed_at,
            number_of_pages=row.number_of_pages,
            tokens_processing_main_content=row.tokens_processing_main_content,
            attributes=row.attributes,
            expires_at=row.expires_at,
        )


class DocumentList(BaseModel):
    pagination: PaginationInfo
    data: list[DocumentOut]


class ProcessingStatusOut(BaseModel):
    document_id: str
    process_status: str
    processing_status: str


class TextContentOut(BaseModel):
    text: str
