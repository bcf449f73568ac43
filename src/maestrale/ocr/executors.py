"""The batch executor of `/v1/ocr`: one JSON body in, the OCR response body out, validated,
limited and accounted as the live endpoint (see `gateway.executors`). An uploaded document is read
in a short unit of work of its own, ended before the document is recognised."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from maestrale.core.auth.principal import Tenant
from maestrale.core.validation import parse_body
from maestrale.files.service import FileService
from maestrale.gateway.executors import ExecutorServices
from maestrale.gateway.hooks import Caller
from maestrale.ocr.schemas import OCRRequest
from maestrale.ocr.service import OcrContext, process


async def run_ocr(
    services: ExecutorServices,
    caller: Caller,
    body: dict[str, Any],
    correlation_id: str,
    source: str,
    extra: Mapping[str, Any],
) -> dict[str, Any]:
    request: OCRRequest = parse_body(OCRRequest, body)
    tenant = Tenant(caller.organization_id, caller.workspace_id, caller.user_id)
    async with services.db.transaction() as work:
        context = OcrContext(
            gateway=services.gateway.releasing(work.release),
            caller=caller,
            settings=services.settings,
            files=FileService(work.session, tenant, caller.key_id, services.blobs),
            blobs=services.blobs,
            correlation_id=correlation_id,
            release=work.release,
            source=source,
        )
        _, response = await process(context, request)
    return response
