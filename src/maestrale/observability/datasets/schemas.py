"""Wire models of datasets and their records."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints


class DatasetCreate(BaseModel):
    name: str = Field(min_length=1, max_length=500)
    description: str = Field(max_length=100_000)


class DatasetUpdate(BaseModel):
    name: str | None = Field(default=None, min_length=1, max_length=500)
    description: str | None = Field(default=None, max_length=100_000)


class DatasetOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    id: str
    created_at: datetime
    updated_at: datetime
    deleted_at: datetime | None
    name: str
    slug: str
    description: str
    owner_id: str
    workspace_id: str


class RecordCreate(BaseModel):
    """`CreateDatasetRecordRequest`; `source` (3.x) is the channel the caller declares."""

    payload: dict[str, Any]
    properties: dict[str, Any] = Field(default_factory=dict)
    source: Literal["DIRECT_INPUT", "TELEMETRY_SPAN"] = "DIRECT_INPUT"


class RecordPayload(BaseModel):
    payload: dict[str, Any]


class RecordProperties(BaseModel):
    properties: dict[str, Any]


class RecordsBulkDelete(BaseModel):
    dataset_record_ids: list[str] = Field(min_length=1, max_length=1000)


class RecordOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    id: str
    created_at: datetime
    updated_at: datetime
    deleted_at: datetime | None
    dataset_id: str
    payload: dict[str, Any]
    properties: dict[str, Any]
    source: str


class DatasetPage(BaseModel):
    count: int
    results: list[DatasetOut]
    next: str | None = None
    previous: str | None = None


class RecordPage(BaseModel):
    count: int
    results: list[RecordOut]
    next: str | None = None
    previous: str | None = None


class DatasetList(BaseModel):
    datasets: DatasetPage


class RecordList(BaseModel):
    records: RecordPage


class ImportFromCampaign(BaseModel):
    campaign_id: str = Field(min_length=1, max_length=200)


class ImportResult(BaseModel):
    """`DatasetImportResult`: the counts of a completed import."""

    requested_record_count: int
    imported_record_count: int
    skipped_record_count: int


class DatasetImportTaskOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    id: str
    created_at: datetime
    updated_at: datetime
    deleted_at: datetime | None
    creator_id: str
    dataset_id: str
    workspace_id: str
    status: str
    progress: int | None
    message: str | None
    result: ImportResult | None = None


Ids = list[Annotated[str, StringConstraints(min_length=1, max_length=200)]]


class ImportFromExplorer(BaseModel):
    completion_event_ids: Ids = Field(min_length=1, max_length=10_000)


class ImportFromFile(BaseModel):
    file_id: str = Field(min_length=1, max_length=200)


class ImportFromPlayground(BaseModel):
    conversation_ids: Ids = Field(min_length=1, max_length=10_000)


class ImportFromDataset(BaseModel):
    dataset_record_ids: Ids = Field(min_length=1, max_length=10_000)


class DatasetImportTaskPage(BaseModel):
    count: int
    results: list[DatasetImportTaskOut]
    next: str | None = None
    previous: str | None = None


class DatasetImportTaskList(BaseModel):
    tasks: DatasetImportTaskPage


class DatasetExport(BaseModel):
    file_url: str


class SpanReference(BaseModel):
    """`TelemetrySpanReference`."""

    trace_id: str = Field(min_length=1, max_length=200)
    span_id: str = Field(min_length=1, max_length=200)


class SpanSource(BaseModel):
    """`SpanDatasetSourceReference`."""

    namespace: Literal["span_attributes", "resource_attributes"]
    key: str = Field(min_length=1, max_length=500)


class SpanMapping(BaseModel):
    """`SpanDatasetMapping`."""

    target_field: str = Field(min_length=1, max_length=500)
    source_field: SpanSource


class SpanMappingContract(BaseModel):
    """`SpanDatasetMappingContract` (version 1)."""

    mappings: list[SpanMapping] = Field(max_length=1000)
    version: Literal[1] = 1


class ImportFromSpans(BaseModel):
    """`ImportDatasetFromSpansRequest`."""

    span_references: list[SpanReference] = Field(min_length=1, max_length=10_000)
    mapping_contract: SpanMappingContract
