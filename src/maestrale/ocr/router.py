"""POST /v1/ocr."""

from __future__ import annotations

from fastapi import Request, Response

from maestrale.config.dependencies import AppSettings
from maestrale.core.auth.dependencies import StandardAuth
from maestrale.core.auth.principal import Tenant
from maestrale.core.dependencies import Blobs
from maestrale.core.errors import MODEL_ERRORS, error_responses
from maestrale.core.routing import Work, domain_router
from maestrale.files.service import FileService
from maestrale.gateway.dependencies import CallerDep, CorrelationId, GatewayDep
from maestrale.gateway.responses import json_response
from maestrale.ocr.schemas import OCRRequest, OCRResponse
from maestrale.ocr.service import OcrContext, process

router = domain_router(tags=["ocr"], responses=error_responses(MODEL_ERRORS))


@router.post("/ocr", response_model=None, responses={200: {"model": OCRResponse}})
async def ocr(
    body: OCRRequest,
    request: Request,
    work: Work,
    principal: StandardAuth,
    gateway: GatewayDep,
    caller: CallerDep,
    correlation: CorrelationId,
    settings: AppSettings,
    blobs: Blobs,
) -> Response:
    """OCR of a document: a PDF or an image given as `document_url` (http(s) or data URL),
    `image_url`, or an uploaded file (`{"type": "file", "file_id": ...}`).

    PDF pages with a text layer are read as they are; scanned pages and images are recognised.
    Each page comes back as markdown in reading order (headings, paragraphs, simple tables),
    with its images (boxes in pixels at the page's dpi, `image_base64` when
    `include_image_base64`) and its dimensions. `pages` selects pages (indexes from 0);
    `image_limit` and `image_min_size` filter images; `document_annotation_format` and
    `bbox_annotation_format` (JSON schemas) ask a chat model for annotations.

    URLs are fetched with the server's fetch policy: loopback, private and link-local hosts are
    refused (400 `url_not_allowed`) unless allowed, within size (413) and time limits."""
    context = OcrContext(
        gateway=gateway,
        caller=caller,
        settings=settings,
        files=FileService(work.session, Tenant.of(principal), principal.key_id, blobs),
        blobs=blobs,
        correlation_id=correlation,
        release=work.release,
    )
    call, response = await process(context, body)
    return json_response(request, call, response)
