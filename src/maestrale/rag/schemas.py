"""Wire models of the RAG groups (mistralai 3.x `RegisterDeploymentRequestDeployment` and its
Vespa deployment, index and field; `MetricsData`, discriminated by `status`;
`GetDeploymentSummariesResponse`; `RegisterSearchIndexResponseIndex`;
`CreateIngestionPipelineConfigurationRequest`, `UpdateRunInfo`,
`IngestionPipelineConfiguration`). Requests ignore unknown fields; the bounds keep a
registration to what one row can hold."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator

MAX_NAME = 128
MAX_INDEXES = 100
MAX_FIELDS = 1000
MAX_SD_BYTES = 256 * 1024
MAX_URL = 2048
MAX_COMPOSITION = 100
MAX_COMPOSITION_VALUE = 4096
MAX_DIMENSIONS = 65536

# Printable: no control characters (a NUL no Postgres text column takes among them).
PRINTABLE = r"^[^\x00-\x1f\x7f]+$"
Name = Annotated[str, Field(min_length=1, max_length=MAX_NAME, pattern=PRINTABLE)]
Count = Annotated[int, Field(ge=0)]
Status = Literal["online", "offline"]
FieldDataType = Literal["int", "bool", "string", "embedding", "long", "float"]
FieldStorage = Literal["in_memory", "on_disk"]
FieldRanking = Literal[
    "count", "embedding", "timestamp", "text", "string", "bool", "int", "language"
]
FieldIndex = Literal["ann", "bm25", "attribute"]


class _In(BaseModel):
    model_config = ConfigDict(extra="ignore")


def _unique(names: list[str], what: str) -> None:
    if len(set(names)) != len(names):
        raise ValueError(f"{what} names must be unique")


def check_query_url(url: str) -> str:
    """An absolute http(s) URL with a host. It is only recorded (the server never calls it), so
    where it points is the caller's business."""
    try:
        parts = urlsplit(url)
        _ = parts.port  # raises on a port that is not a number in range
    except ValueError as exc:
        raise ValueError(f"is not a valid URL ({exc})") from None
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise ValueError("must be an absolute http:// or https:// URL")
    if any(ch.isspace() or ord(ch) < 0x20 or ord(ch) == 0x7F for ch in url):
        raise ValueError("must not contain spaces or control characters")
    return url


# -- deployments ----------------------------------------------------------------------------


class VespaFieldIn(_In):
    name: Name
    type: FieldDataType
    storage: FieldStorage
    ranking: FieldRanking
    index_type: FieldIndex | None
    multidimensional: bool


class VespaIndexIn(_In):
    name: Name
    fields: Annotated[list[VespaFieldIn], Field(max_length=MAX_FIELDS)]
    sd: str
    embedding_dimensions: Annotated[int, Field(ge=1, le=MAX_DIMENSIONS)] | None = None

    @field_validator("fields")
    @classmethod
    def _unique_fields(cls, value: list[VespaFieldIn]) -> list[VespaFieldIn]:
        _unique([f.name for f in value], "field")
        return value

    @field_validator("sd")
    @classmethod
    def _sd_size(cls, value: str) -> str:
        if len(value.encode("utf-8", "surrogatepass")) > MAX_SD_BYTES:
            raise ValueError(f"is longer than {MAX_SD_BYTES} bytes (UTF-8)")
        if "\x00" in value:
            raise ValueError("must not contain NUL characters")
        return value


class VespaDeploymentIn(_In):
    type: Literal["vespa"] = "vespa"
    vespa_version: Annotated[str, Field(min_length=1, max_length=64, pattern=PRINTABLE)]
    indexes: Annotated[list[VespaIndexIn], Field(max_length=MAX_INDEXES)]
    query_url: Annotated[str, Field(max_length=MAX_URL)]

    @field_validator("indexes")
    @classmethod
    def _unique_indexes(cls, value: list[VespaIndexIn]) -> list[VespaIndexIn]:
        _unique([index.name for index in value], "index")
        return value

    @field_validator("query_url")
    @classmethod
    def _url(cls, value: str) -> str:
        return check_query_url(value)


class DeploymentRegister(_In):
    name: Name
    deployment: VespaDeploymentIn
    status: Status = "offline"


class IndexMetricsIn(_In):
    name: Name
    document_count: Count


class MetricsOnline(_In):
    status: Literal["online"]
    document_count: Count
    index_metrics: Annotated[list[IndexMetricsIn], Field(max_length=MAX_INDEXES)]

    @field_validator("index_metrics")
    @classmethod
    def _unique_indexes(cls, value: list[IndexMetricsIn]) -> list[IndexMetricsIn]:
        _unique([m.name for m in value], "index")
        return value


class MetricsOffline(_In):
    status: Literal["offline"]
    clear_metrics: bool = False


class IndexSummary(BaseModel):
    id: str
    name: str
    document_count: int | None


class VespaDeploymentSummary(BaseModel):
    indexes: list[IndexSummary]
    type: Literal["vespa"] = "vespa"


class DeploymentSummary(BaseModel):
    id: str
    name: str
    creator_id: str
    document_count: int
    status: Status
    created_at: datetime
    modified_at: datetime
    deployment: VespaDeploymentSummary


class DeploymentList(BaseModel):
    deployments: list[DeploymentSummary]


class Registered(BaseModel):
    id: str


class Unregistered(BaseModel):
    id: str
    deleted: bool = True


# -- ingestion pipeline configurations -----------------------------------------------------


class TargetIndexRef(_In):
    name: Name
    type: Literal["vespa"] = "vespa"


class PipelineRegister(_In):
    name: Name
    pipeline_composition: (
        Annotated[
            dict[
                Annotated[str, Field(max_length=MAX_NAME)],
                Annotated[str, Field(max_length=MAX_COMPOSITION_VALUE)],
            ],
            Field(max_length=MAX_COMPOSITION),
        ]
        | None
    ) = None
    target_indexes: Annotated[list[TargetIndexRef], Field(max_length=MAX_INDEXES)] | None = None


class RunInfoIn(_In):
    execution_time: datetime
    chunks_count: Count


class PipelineOut(BaseModel):
    id: str
    author_id: str
    name: str
    created_at: datetime
    modified_at: datetime
    last_run_time: datetime | None
    last_run_chunks_count: int
    total_chunks_count: int
    pipeline_composition: dict[str, str] | None
    # Not in the SDK's model (its parser ignores it): what was registered, to read it back.
    target_indexes: list[TargetIndexRef] | None
