"""The batch executor of `/v1/audio/transcriptions`: a JSON body (`file_url` or `file_id`, and
the endpoint's other fields) in, the transcription response body out, validated, limited and
accounted as the live endpoint (see `gateway.executors`). An uploaded file is read in a short unit
of work of its own, ended before the audio is transcribed."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from maestrale.audio.schemas import TranscriptionForm
from maestrale.audio.service import TranscriptionService, response_body
from maestrale.core.auth.principal import Tenant
from maestrale.core.validation import parse_body
from maestrale.files.service import FileService
from maestrale.gateway.executors import ExecutorServices
from maestrale.gateway.hooks import Caller


async def run_transcription(
    services: ExecutorServices,
    caller: Caller,
    body: dict[str, Any],
    correlation_id: str,
    source: str,
    extra: Mapping[str, Any],
) -> dict[str, Any]:
    form: TranscriptionForm = parse_body(TranscriptionForm, body)
    tenant = Tenant(caller.organization_id, caller.workspace_id, caller.user_id)
    async with services.db.transaction() as work:
        files = FileService(work.session, tenant, caller.key_id, services.blobs)
        gateway = services.gateway.releasing(work.release)
        service = TranscriptionService(gateway, services.settings, files)
        call, request = await service.prepare(
            caller, form, None, correlation_id=correlation_id, source=source
        )
        result = await service.complete(call, request)
    return response_body(form.model, result, list(form.timestamp_granularities))
