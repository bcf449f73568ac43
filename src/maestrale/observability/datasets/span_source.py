"""Telemetry spans as an import source: the spans named by (trace id, span id), read from the
telemetry store within the import's workspace, each becoming a record through the request's
mapping contract (datasets.span_records). A reference not found in the workspace (absent, of
another workspace, or purged since) is skipped as "not found", as the SDK documents; a span
without messages as "no messages". Trace and span ids are attached as record properties."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select, tuple_
from sqlalchemy.ext.asyncio import AsyncSession

from maestrale.core.auth.principal import Tenant
from maestrale.core.db import Database
from maestrale.observability.datasets.sources import BATCH, Item, Source
from maestrale.observability.datasets.span_records import span_payload
from maestrale.telemetry.tables import TelemetrySpan

Ref = tuple[str, str]


def key_of(ref: Ref) -> str:
    """An item's key: `<trace id>:<span id>` (what the record's id derives from)."""
    return f"{ref[0]}:{ref[1]}"


class SpanReads:
    """The spans an import reads, scoped to the workspace."""

    def __init__(self, session: AsyncSession, tenant: Tenant) -> None:
        self.session = session
        self.tenant = tenant

    def _where(self, refs: Sequence[Ref]) -> Any:
        return (
            TelemetrySpan.workspace_id == self.tenant.workspace_id,
            tuple_(TelemetrySpan.trace_id, TelemetrySpan.span_id).in_(list(refs)),
        )

    async def found(self, refs: Sequence[Ref]) -> set[Ref]:
        stmt = select(TelemetrySpan.trace_id, TelemetrySpan.span_id).where(*self._where(refs))
        return {(t, s) for t, s in await self.session.execute(stmt)}

    async def by_refs(self, refs: Sequence[Ref]) -> list[TelemetrySpan]:
        stmt = select(TelemetrySpan).where(*self._where(refs))
        return list((await self.session.execute(stmt)).scalars())


def span_item(span: TelemetrySpan, mappings: list[dict[str, Any]]) -> Item:
    key = key_of((span.trace_id, span.span_id))
    payload, skipped = span_payload(mappings, span.attributes or {}, span.resource_attributes or {})
    if payload is None:
        return Item(key, skipped=skipped)
    properties: dict[str, Any] = {"trace_id": span.trace_id, "span_id": span.span_id}
    for name, value in (
        ("span_name", span.name),
        ("model", span.response_model or span.request_model),
        ("service_name", span.service_name),
    ):
        if value:
            properties[name] = value
    return Item(key, payload, properties, "TELEMETRY_SPAN")


@dataclass
class _Spans:
    db: Database
    tenant: Tenant
    refs: list[Ref]
    mappings: list[dict[str, Any]]

    async def total(self) -> int:
        return len(self.refs)

    async def batches(self) -> AsyncIterator[list[Item]]:
        for i in range(0, len(self.refs), BATCH):
            chunk = self.refs[i : i + BATCH]
            async with self.db.transaction() as work:
                spans = await SpanReads(work.session, self.tenant).by_refs(chunk)
            # Items are made with no session open (parsing the messages is CPU work).
            found = {(s.trace_id, s.span_id): span_item(s, self.mappings) for s in spans}
            yield [found.get(r) or Item(key_of(r), skipped="not found") for r in chunk]


def spans(db: Database, tenant: Tenant, params: dict[str, Any]) -> Source:
    refs = [(str(t), str(s)) for t, s in params["refs"]]
    return _Spans(db, tenant, refs, list(params["mappings"]))
