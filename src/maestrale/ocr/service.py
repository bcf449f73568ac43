"""OCR: resolve the model, load the document, recognise the pages, annotate, account.

A local engine (`OcrEngine`) recognises images; this service does the rest (PDF text layers,
layout, images, annotations). An upstream engine (`OcrDocumentEngine`) gets the whole request,
with an uploaded file inlined as a data URL since the upstream cannot read it.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

from maestrale.completions.gateway import Call, Gateway, engine_failure
from maestrale.completions.hooks import Caller
from maestrale.config import Settings
from maestrale.core.blobs import BlobStore
from maestrale.core.errors import AppError, BadRequest
from maestrale.engines.ocr_types import OcrImage
from maestrale.engines.protocols import OcrDocumentEngine
from maestrale.engines.types import EngineError
from maestrale.files.service import FileService
from maestrale.ocr.annotations import (
    annotate_document,
    annotate_image,
    annotation_model,
    check_format,
)
from maestrale.ocr.documents import Document, load_document
from maestrale.ocr.pipeline import ImageOptions, PageResult, prepare, recognise
from maestrale.ocr.schemas import FileChunk, OCRRequest
from maestrale.ocr.shapes import Shaper


@dataclass(frozen=True, slots=True)
class OcrContext:
    """What one OCR request needs besides its body."""

    gateway: Gateway
    caller: Caller
    settings: Settings
    files: FileService
    blobs: BlobStore
    correlation_id: str


async def process(ctx: OcrContext, request: OCRRequest) -> tuple[Call, dict[str, Any]]:
    """The OCR response body for `request` (and the call, for the response headers)."""
    if not request.model:
        raise BadRequest("model is required", code="missing_model", param="model")
    call = await ctx.gateway.open(
        ctx.caller, request.model, "ocr", correlation_id=ctx.correlation_id
    )
    document_format = check_format(request.document_annotation_format, "document_annotation_format")
    bbox_format = check_format(request.bbox_annotation_format, "bbox_annotation_format")
    if isinstance(call.engine, OcrDocumentEngine):
        return call, await _upstream(ctx, call, request)
    document = await load_document(request, ctx.settings.fetch_policy, ctx.files, ctx.blobs)
    pages = await _recognise(ctx, call, request, document)
    shaper = Shaper.of(request)
    body: dict[str, Any] = {
        "pages": [shaper.page(page) for page in pages],
        "model": request.model,
        "document_annotation": None,
        "usage_info": {"pages_processed": len(pages), "doc_size_bytes": len(document.data)},
    }
    if document_format is not None or bbox_format is not None:
        await _annotate(ctx, call, request, pages, body, document_format, bbox_format)
    return call, body


async def _recognise(
    ctx: OcrContext, call: Call, request: OCRRequest, document: Document
) -> list[PageResult]:
    prepared = await prepare(document, request.pages, ctx.settings.ocr_max_pages)
    try:
        await ctx.gateway.admit(call, 0)
        options = ImageOptions(
            limit=request.image_limit,
            min_size=request.image_min_size or 0,
        )
        try:
            # Engine failures are accounted and mapped (4xx kept, 5xx → 502) by the gateway.
            pages = await ctx.gateway.invoke(
                call, recognise(call.engine, prepared, options), None, None
            )
        except AppError as exc:
            if not isinstance(exc.__cause__, EngineError):  # else the gateway accounted it
                await ctx.gateway.finish(call, None, None, None, None, exc.status_code)
            raise
    finally:
        await prepared.close()
    await ctx.gateway.finish(call, None, None, None, None, 200, pages=len(pages))
    return pages


async def _annotate(
    ctx: OcrContext,
    call: Call,
    request: OCRRequest,
    pages: list[PageResult],
    body: dict[str, Any],
    document_format: dict[str, Any] | None,
    bbox_format: dict[str, Any] | None,
) -> None:
    model = annotation_model(ctx.gateway, ctx.settings.ocr_annotation_model)
    if bbox_format is not None:
        for page, page_body in zip(pages, body["pages"], strict=True):
            for image, image_body in zip(page.images, page_body["images"], strict=True):
                try:
                    lines = await call.engine.recognize(OcrImage(image.image, image.id))
                except EngineError as exc:  # the OCR call is accounted already
                    raise engine_failure(exc, call.model) from exc
                text = "\n".join(line.text for line in sorted(lines, key=lambda x: x.box[1]))
                where = (
                    f"{image.id} on page {page.index} ({page.width}x{page.height} px), box "
                    f"left {image.box[0]}, top {image.box[1]}, right {image.box[2]}, "
                    f"bottom {image.box[3]}"
                )
                image_body["image_annotation"] = await annotate_image(
                    ctx.gateway, ctx.caller, model, bbox_format, where, text, ctx.correlation_id
                )
    if document_format is not None:
        markdown = "\n\n".join(page.markdown for page in pages)
        body["document_annotation"] = await annotate_document(
            ctx.gateway,
            ctx.caller,
            model,
            document_format,
            request.document_annotation_prompt,
            markdown,
            ctx.correlation_id,
        )


def _data_url(document: Document) -> str:
    return f"data:{document.mimetype};base64," + base64.b64encode(document.data).decode("ascii")


async def _upstream(ctx: OcrContext, call: Call, request: OCRRequest) -> dict[str, Any]:
    body = request.model_dump(mode="json", exclude_none=True)
    body["model"] = call.upstream
    if isinstance(request.document, FileChunk):
        # The upstream cannot read this server's files: the content goes up inline.
        document = await load_document(request, ctx.settings.fetch_policy, ctx.files, ctx.blobs)
        url = _data_url(document)
        body["document"] = (
            {"type": "document_url", "document_url": url, "document_name": document.name}
            if document.kind == "pdf"
            else {"type": "image_url", "image_url": url}
        )
    await ctx.gateway.admit(call, 0)
    answer: dict[str, Any] = await ctx.gateway.invoke(
        call, call.engine.process_document(body), None, None
    )
    usage = answer.get("usage_info")
    processed = usage.get("pages_processed") if isinstance(usage, dict) else None
    pages = processed if isinstance(processed, int) else len(answer["pages"])
    await ctx.gateway.finish(call, None, None, None, None, 200, pages=pages)
    answer["model"] = request.model
    return answer
