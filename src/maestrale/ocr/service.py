"""OCR: resolve the model, load the document, recognise the pages, annotate, account.

A local engine (`OcrEngine`) recognises images; this service does the rest (PDF text layers,
layout, images, annotations). An upstream engine (`OcrDocumentEngine`) gets the whole request,
with an uploaded file inlined as a data URL since the upstream cannot read it.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

from maestrale.config import Settings
from maestrale.core.blobs import BlobStore
from maestrale.core.errors import BadRequest
from maestrale.core.uow import Release
from maestrale.engines.ocr_types import OcrImage
from maestrale.engines.protocols import OcrDocumentEngine, OcrEngine
from maestrale.files.service import FileService
from maestrale.gateway.call import Call, Report
from maestrale.gateway.capabilities import OCR
from maestrale.gateway.gateway import Gateway
from maestrale.gateway.hooks import Caller
from maestrale.ocr.annotations import (
    annotate_document,
    annotate_image,
    annotation_model,
    check_format,
)
from maestrale.ocr.documents import Document, load_document
from maestrale.ocr.pipeline import ImageOptions, OpenedDocument, PageResult, prepare, recognise
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
    # Ends the request's transaction before a URL is fetched and once the document is read
    # (the gateway, bound to the same unit of work, ends it before each model call).
    release: Release
    source: str = "api"  # where the call comes from, for accounting ("batch" for a batch line)


@dataclass(slots=True)
class _Recognised:
    pages: list[PageResult]
    image_texts: list[list[str]]  # per page, the text inside each image (for bbox annotations)


async def process(ctx: OcrContext, request: OCRRequest) -> tuple[Call[OcrEngine], dict[str, Any]]:
    """The OCR response body for `request` (and the call, for the response headers)."""
    if not request.model:
        raise BadRequest("model is required", code="missing_model", param="model")
    call = await ctx.gateway.open(
        ctx.caller, request.model, OCR, correlation_id=ctx.correlation_id, source=ctx.source
    )
    document_format = check_format(request.document_annotation_format, "document_annotation_format")
    bbox_format = check_format(request.bbox_annotation_format, "bbox_annotation_format")
    if isinstance(call.engine, OcrDocumentEngine):
        return call, await _upstream(ctx, call, call.engine, request)
    document = await load_document(
        request, ctx.settings.fetch_policy, ctx.files, ctx.blobs, ctx.release
    )
    await ctx.release()  # no transaction open while the pages are prepared (CPU, off the loop)
    recognised = await _recognise(
        ctx, call, request, document, with_image_texts=bbox_format is not None
    )
    pages = recognised.pages
    shaper = Shaper.of(request)
    body: dict[str, Any] = {
        "pages": [shaper.page(page) for page in pages],
        "model": request.model,
        "document_annotation": None,
        "usage_info": {"pages_processed": len(pages), "doc_size_bytes": len(document.data)},
    }
    if document_format is not None or bbox_format is not None:
        await _annotate(ctx, request, recognised, body, document_format, bbox_format)
    return call, body


async def _recognise(
    ctx: OcrContext,
    call: Call[OcrEngine],
    request: OCRRequest,
    document: Document,
    *,
    with_image_texts: bool,
) -> _Recognised:
    """The pages, recognised through the gateway (which maps engine failures and accounts for
    the call, with its pages, also when the document turns out unreadable)."""
    prepared = await prepare(document, request.pages, ctx.settings.ocr_max_pages)
    try:
        await ctx.gateway.admit(call, 0)
        options = ImageOptions(limit=request.image_limit, min_size=request.image_min_size or 0)
        return await ctx.gateway.run(
            call,
            lambda engine: _pages(engine, prepared, options, with_image_texts=with_image_texts),
            lambda recognised: Report(pages=len(recognised.pages)),
        )
    finally:
        await prepared.close()


async def _pages(
    engine: OcrEngine, prepared: OpenedDocument, options: ImageOptions, *, with_image_texts: bool
) -> _Recognised:
    pages = await recognise(engine, prepared, options)
    texts: list[list[str]] = []
    if with_image_texts:
        for page in pages:
            page_texts = []
            for image in page.images:
                lines = await engine.recognize(OcrImage(image.image, image.id))
                page_texts.append(
                    "\n".join(line.text for line in sorted(lines, key=lambda x: x.box[1]))
                )
            texts.append(page_texts)
    return _Recognised(pages, texts)


async def _annotate(
    ctx: OcrContext,
    request: OCRRequest,
    recognised: _Recognised,
    body: dict[str, Any],
    document_format: dict[str, Any] | None,
    bbox_format: dict[str, Any] | None,
) -> None:
    model = annotation_model(ctx.gateway, ctx.settings.ocr_annotation_model)
    pages = recognised.pages
    if bbox_format is not None:
        for page, page_body, texts in zip(
            pages, body["pages"], recognised.image_texts, strict=True
        ):
            for image, image_body, text in zip(
                page.images, page_body["images"], texts, strict=True
            ):
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


async def _upstream(
    ctx: OcrContext, call: Call[OcrEngine], engine: OcrDocumentEngine, request: OCRRequest
) -> dict[str, Any]:
    """The whole request run by an upstream platform (`engine`, the call's own engine)."""
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
    answer = await ctx.gateway.run(call, lambda _: engine.process_document(body), _upstream_report)
    answer["model"] = request.model
    return answer


def _upstream_report(answer: dict[str, Any]) -> Report:
    usage = answer.get("usage_info")
    processed = usage.get("pages_processed") if isinstance(usage, dict) else None
    return Report(pages=processed if isinstance(processed, int) else len(answer["pages"]))
