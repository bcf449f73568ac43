"""Wire models of the index operations of `/v1/context/search-indexes` (mistralai 3.x
`CreateManagedIndexRequest`, `UpdateManagedIndexRequest`, `ManagedIndexResponse`,
`ListManagedIndexesResponse`, `DeleteManagedIndexResponse`, `IngestDocumentsRequest`,
`IngestDocumentsResponse`, `DeleteDocumentsRequest`, `DeleteDocumentsResponse`).

Requests ignore unknown keys, as the SDK's own models do. The distance metric `l2` is refused
(422): the store keeps unit vectors and ranks by cosine, which `inner_product` over unit vectors
equals, but Euclidean distance over the caller's raw vectors does not."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from maestrale.libraries.index.capability import PGVECTOR_MAX_DIMENSION

MAX_NAME = 128
NAME_PATTERN = r"^[A-Za-z0-9._\-]+$"
MAX_FIELDS = 64  # per kind (document, chunk)
FIELD_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*$"
MAX_SOURCE_ID = 512
MAX_DOCUMENT_IDS = 1000

FieldType = Literal[
    "text",
    "keyword",
    "int",
    "long",
    "float",
    "bool",
    "timestamp",
    "json",
    "dense_vector",
    "text[]",
    "keyword[]",
    "int[]",
    "long[]",
    "float[]",
    "bool[]",
    "timestamp[]",
]
Status = Literal["provisioning", "ready", "failed", "deleting"]
Name = Annotated[str, Field(min_length=1, max_length=MAX_NAME, pattern=NAME_PATTERN)]
FieldName = Annotated[str, Field(min_length=1, max_length=64, pattern=FIELD_NAME_PATTERN)]


class _In(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)


class FieldDefinitionIn(_In):
    """One of the SDK's 16 `*FieldDefinition`s, told apart by `type`. `indexed` defaults by
    type (see `fields.INDEXED_BY_DEFAULT`)."""

    type: FieldType
    indexed: bool | None = None
    required: bool = False
    system: bool = False
    default: Any = None


FieldMap = Annotated[dict[FieldName, FieldDefinitionIn], Field(max_length=MAX_FIELDS)]


class ManagedIndexFieldsIn(_In):
    document_fields: FieldMap | None = None
    chunk_fields: FieldMap | None = None


class EmbeddingIn(_In):
    """`MistralEmbeddingModel` (a model of the catalog embeds the chunks) or
    `CustomEmbeddingModel` (the caller sends every vector)."""

    type: Literal["mistral", "custom"]
    name: Annotated[str, Field(min_length=1, max_length=200)]
    dimensions: Annotated[int, Field(ge=1, le=PGVECTOR_MAX_DIMENSION)]
    dtype: Literal["float32", "float16"] | None = None
    distance_metric: Literal["cosine", "inner_product", "l2"] | None = None

    @field_validator("distance_metric")
    @classmethod
    def _no_l2(cls, value: str | None) -> str | None:
        if value == "l2":
            raise ValueError(
                "l2 is not served: the index keeps unit vectors and ranks by cosine "
                "(use cosine, or inner_product over unit vectors, which ranks the same)"
            )
        return value


class ManagedIndexConfigIn(_In):
    embedding: EmbeddingIn


class CreateIndexIn(_In):
    name: Name
    config: ManagedIndexConfigIn
    schema_: ManagedIndexFieldsIn | None = Field(default=None, alias="schema")


class UpdateIndexIn(_In):
    schema_: ManagedIndexFieldsIn = Field(alias="schema")


class IngestIn(_In):
    # Counted by the service (more than MAX_DOCUMENTS is a 400, as the SDK documents).
    documents: list[dict[str, Any]]


class DeleteDocumentsIn(_In):
    document_ids: Annotated[
        list[Annotated[str, Field(min_length=1, max_length=MAX_SOURCE_ID)]],
        Field(max_length=MAX_DOCUMENT_IDS),
    ]


# Responses (for the OpenAPI document; the routes answer the same dicts).


class ManagedIndexOut(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    id: str
    name: str
    creator_id: str
    status: Status
    schema_: dict[str, Any] = Field(alias="schema")
    config: dict[str, Any]
    status_message: str | None = None
    created_at: datetime | None = None
    modified_at: datetime | None = None


class ManagedIndexList(BaseModel):
    data: list[ManagedIndexOut]
    next_page_token: str | None = None


class DeletedIndexOut(BaseModel):
    id: str
    name: str
    status: Status


class FieldErrorOut(BaseModel):
    location: list[str | int]
    type: str
    message: str


class AcceptedOut(BaseModel):
    status: Literal["accepted"] = "accepted"
    position: int
    document_id: str
    chunk_count: int


class RejectedOut(BaseModel):
    status: Literal["rejected"] = "rejected"
    position: int
    errors: list[FieldErrorOut]


class IngestOut(BaseModel):
    accepted: int
    rejected: int
    results: list[AcceptedOut | RejectedOut]


class DeletedDocumentsOut(BaseModel):
    deleted_document_ids: list[str]
    missing: list[str]
