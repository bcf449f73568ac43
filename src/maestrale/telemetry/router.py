"""The OTLP/HTTP receiver: traces and logs into the workspace's telemetry store.

`POST /v1/traces` and `/v1/logs` are OTLP/HTTP's own paths (an OpenTelemetry SDK's exporter
pointed at the server's base URL); `/telemetry/v1/{traces,logs,metrics}` is where the official
workflows worker exports. Both take an API key of the workspace (`Authorization: Bearer`)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response

from maestrale.config.dependencies import AppSettings
from maestrale.core.auth.dependencies import StandardAuth
from maestrale.core.auth.principal import Tenant
from maestrale.core.errors import PayloadTooLarge, error_responses
from maestrale.telemetry.dependencies import Queue
from maestrale.telemetry.ingest import export
from maestrale.telemetry.otlp.records import Owner

# What an export can answer (the body is OTLP's, read by hand: declared here for the API docs).
_OTLP_BODY: dict[str, Any] = {"application/x-protobuf": {}, "application/json": {}}
_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "The export response of OTLP, in the request's format",
        "content": _OTLP_BODY,
    },
    **error_responses((400, 401, 413, 415, 429)),
}
_OPENAPI = {"requestBody": {"required": True, "content": _OTLP_BODY}}
router = APIRouter(tags=["telemetry"], responses=_RESPONSES)
worker_router = APIRouter(prefix="/telemetry/v1", tags=["telemetry"], include_in_schema=False)


async def _export(
    kind: str, request: Request, principal: StandardAuth, settings: AppSettings, queue: Queue
) -> Response:
    raw = await request.body()
    if len(raw) > settings.telemetry_max_body_bytes:
        raise PayloadTooLarge(
            f"an OTLP body is at most {settings.telemetry_max_body_bytes} bytes",
            code="payload_too_large",
        )
    tenant = Tenant.of(principal)
    owner = Owner(
        organization_id=tenant.organization_id,
        workspace_id=tenant.workspace_id,
        user_id=tenant.user_id or "",
        service_account_id=principal.service_account_id or "",
    )
    answer, points = await export(
        kind,
        raw,
        request.headers.get("content-type"),
        request.headers.get("content-encoding"),
        owner,
        settings,
        queue,
    )
    if points:
        queue.metric_points += points
    return Response(answer.content, media_type=answer.media_type)


@router.post("/traces", openapi_extra=_OPENAPI)
async def export_traces(
    request: Request, principal: StandardAuth, settings: AppSettings, queue: Queue
) -> Response:
    """OTLP/HTTP trace export (ExportTraceServiceRequest, `application/x-protobuf` or
    `application/json`, optionally gzipped), stored in the key's workspace. Answers an
    ExportTraceServiceResponse in the request's format; spans refused (bad ids, times far in
    the future) are counted in its `partial_success`. 429 with Retry-After when the store is
    busy."""
    return await _export("traces", request, principal, settings, queue)


@router.post("/logs", openapi_extra=_OPENAPI)
async def export_logs(
    request: Request, principal: StandardAuth, settings: AppSettings, queue: Queue
) -> Response:
    """OTLP/HTTP log export (ExportLogsServiceRequest), stored in the key's workspace."""
    return await _export("logs", request, principal, settings, queue)


# The workflows worker's trace and log exports: as POST /v1/traces and /v1/logs.
worker_router.add_api_route("/traces", export_traces, methods=["POST"], name="worker_traces")
worker_router.add_api_route("/logs", export_logs, methods=["POST"], name="worker_logs")


@worker_router.post("/metrics")
async def worker_metrics(
    request: Request, principal: StandardAuth, settings: AppSettings, queue: Queue
) -> Response:
    """The workflows worker's metric export: decoded and counted, not stored (the store keeps
    spans and logs)."""
    return await _export("metrics", request, principal, settings, queue)
