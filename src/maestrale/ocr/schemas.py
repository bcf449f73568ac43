"""Wire models of POST /v1/ocr (the SDK's OCRRequest and OCRResponse)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


class _Wire(BaseModel):
    # Forward compatible: fields a newer SDK sends are accepted and ignored.
    model_config = ConfigDict(extra="ignore")


class DocumentURLChunk(_Wire):
    type: Literal["document_url"] = "document_url"
    document_url: str
    document_name: str | None = None


class ImageURL(_Wire):
    url: str
    detail: str | None = None


class ImageURLChunk(_Wire):
    type: Literal["image_url"] = "image_url"
    image_url: str | ImageURL

    @property
    def url(self) -> str:
        return self.image_url if isinstance(self.image_url, str) else self.image_url.url


class FileChunk(_Wire):
    type: Literal["file"] = "file"
    file_id: str


Document = Annotated[DocumentURLChunk | ImageURLChunk | FileChunk, Field(discriminator="type")]


class OCRRequest(_Wire):
    """What `client.ocr.process` sends."""

    model: str | None
    document: Document
    id: str | None = None
    pages: list[int] | str | None = Field(
        default=None, description="page indexes (from 0), as a list or as '0,2,4-6'"
    )
    include_image_base64: bool | None = None
    image_limit: int | None = Field(default=None, ge=0)
    image_min_size: int | None = Field(default=None, ge=0)
    bbox_annotation_format: dict[str, Any] | None = None
    document_annotation_format: dict[str, Any] | None = None
    document_annotation_prompt: str | None = None
    table_format: Literal["markdown", "html"] | None = None
    extract_header: bool = False
    extract_footer: bool = False
    include_blocks: bool = True
    confidence_scores_granularity: Literal["word", "page", "block"] | None = None

    @model_validator(mode="before")
    @classmethod
    def _document_type(cls, data: Any) -> Any:
        # The chunk's `type` has a default in the SDK: accept a document that leaves it out.
        if isinstance(data, dict) and isinstance(data.get("document"), dict):
            document = data["document"]
            if "type" not in document:
                for key, kind in (
                    ("document_url", "document_url"),
                    ("image_url", "image_url"),
                    ("file_id", "file"),
                ):
                    if key in document:
                        data = {**data, "document": {**document, "type": kind}}
                        break
        return data


# Response models: documentation of the body the service builds (as plain dicts, for speed).


class OCRImageObject(BaseModel):
    id: str
    top_left_x: int | None
    top_left_y: int | None
    bottom_right_x: int | None
    bottom_right_y: int | None
    image_base64: str | None = None
    image_annotation: str | None = None


class OCRPageDimensions(BaseModel):
    dpi: int
    height: int
    width: int


class OCRPageObject(BaseModel):
    index: int
    markdown: str
    images: list[OCRImageObject]
    dimensions: OCRPageDimensions | None


class OCRUsageInfo(BaseModel):
    pages_processed: int
    doc_size_bytes: int | None = None


class OCRResponse(BaseModel):
    pages: list[OCRPageObject]
    model: str
    usage_info: OCRUsageInfo
    document_annotation: str | None = None
