"""Where imported records come from: each source reads its items in batches, in a stable order,
each item under a stable key (an event, record or conversation id, a file's line number), so
that a retried import recomputes exactly the same records (see datasets.tasks).

Sources read with their own short sessions, through repositories scoped to the import's
workspace: an id of another workspace, or one deleted since the import was requested, is skipped
with its reason."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import orjson
from sqlalchemy.ext.asyncio import AsyncSession

from maestrale.accounting.tables import ChatCompletionEvent
from maestrale.conversations.entries import to_messages
from maestrale.core.auth.principal import Tenant
from maestrale.core.blobs import BlobStore
from maestrale.core.db import Database
from maestrale.core.validation import JsonProblem, check_json
from maestrale.observability.campaigns.repository import CampaignRepository
from maestrale.observability.campaigns.tables import CampaignEvent
from maestrale.observability.datasets.repository import ConversationReads, RecordRepository
from maestrale.observability.datasets.service import check_payload
from maestrale.observability.errors import ObservabilityError
from maestrale.observability.events.repository import ChatCompletionEventRepository

BATCH = 200
MAX_FILE_RECORDS = 100_000
MAX_LINE_BYTES = 16 * 1024 * 1024
SourceFactory = Callable[[Database, Tenant, dict[str, Any]], "Source"]
Load = Callable[[AsyncSession, Tenant, Sequence[str]], Awaitable[dict[str, "Item"]]]


class ImportFailed(Exception):
    """The source cannot be imported at all (a deleted campaign, an invalid file): the task
    fails with this message and nothing is imported."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass
class Item:
    """One would-be record: `payload` None means skipped, for `skipped` (a short reason)."""

    key: str
    payload: dict[str, Any] | None = None
    properties: dict[str, Any] = field(default_factory=dict)
    source: str = "EXPLORER"
    skipped: str | None = None


class Source(Protocol):
    async def total(self) -> int:
        """How many items the import has (for its progress)."""
        ...

    def batches(self) -> AsyncIterator[list[Item]]:
        """The items, in batches of at most BATCH, always in the same order."""
        ...


def _chunks(ids: Sequence[str]) -> list[Sequence[str]]:
    return [ids[i : i + BATCH] for i in range(0, len(ids), BATCH)]


@dataclass
class _ById:
    """A list of ids read batch by batch; `load` maps a batch's found ids to their items."""

    db: Database
    tenant: Tenant
    ids: list[str]
    load: Load

    async def total(self) -> int:
        return len(self.ids)

    async def batches(self) -> AsyncIterator[list[Item]]:
        for chunk in _chunks(self.ids):
            async with self.db.transaction() as work:
                found = await self.load(work.session, self.tenant, chunk)
            yield [found.get(i) or Item(i, skipped="not found") for i in chunk]


def event_item(event: ChatCompletionEvent, key: str, **properties: Any) -> Item:
    base = {"event_id": event.id, "model": event.model, "correlation_id": event.correlation_id}
    return Item(key, {"messages": event.conversation()}, {**base, **properties}, "EXPLORER")


async def _events(session: AsyncSession, tenant: Tenant, ids: Sequence[str]) -> dict[str, Item]:
    events = await ChatCompletionEventRepository(session, tenant).by_ids(ids)
    return {e.id: event_item(e, e.id) for e in events}


async def _records(session: AsyncSession, tenant: Tenant, ids: Sequence[str]) -> dict[str, Item]:
    records = await RecordRepository(session, tenant).alive_by_ids(ids)
    return {r.id: Item(r.id, dict(r.payload), dict(r.properties), r.source) for r in records}


async def _conversations(
    session: AsyncSession, tenant: Tenant, ids: Sequence[str]
) -> dict[str, Item]:
    found: dict[str, Item] = {}
    for conv, entries in await ConversationReads(session, tenant).with_entries(ids):
        cid = conv.id
        messages = to_messages(conv.instructions, entries)
        if not any(m["role"] != "system" for m in messages):
            found[cid] = Item(cid, skipped="no messages")
            continue
        properties = {"conversation_id": cid, "model": conv.model, "agent_id": conv.agent_id}
        if conv.name:
            properties["name"] = conv.name
        found[cid] = Item(cid, {"messages": messages}, properties, "PLAYGROUND")
    return found


def explorer(db: Database, tenant: Tenant, params: dict[str, Any]) -> Source:
    return _ById(db, tenant, list(params["ids"]), _events)


def dataset(db: Database, tenant: Tenant, params: dict[str, Any]) -> Source:
    return _ById(db, tenant, list(params["ids"]), _records)


def playground(db: Database, tenant: Tenant, params: dict[str, Any]) -> Source:
    return _ById(db, tenant, list(params["ids"]), _conversations)


@dataclass
class _Campaign:
    """A campaign's events in selection order: the judged ones, with their verdict."""

    db: Database
    tenant: Tenant
    campaign_id: str

    async def total(self) -> int:
        async with self.db.transaction() as work:
            campaigns = CampaignRepository(work.session, self.tenant)
            if await campaigns.alive_by_id(self.campaign_id) is None:
                raise ImportFailed(f"campaign {self.campaign_id} was deleted")
            return await campaigns.count_events(self.campaign_id)

    async def batches(self) -> AsyncIterator[list[Item]]:
        after = -1
        while True:
            async with self.db.transaction() as work:
                campaigns = CampaignRepository(work.session, self.tenant)
                campaign = await campaigns.get(self.campaign_id)
                judge_name = campaign.judge_definition.get("name") if campaign else None
                rows = await campaigns.verdicts(self.campaign_id, after, BATCH)
            if not rows:
                return
            after = rows[-1][0].position
            yield [self._item(verdict, event, judge_name) for verdict, event in rows]

    def _item(self, verdict: CampaignEvent, event: ChatCompletionEvent | None, judge: Any) -> Item:
        if event is None:
            return Item(verdict.event_id, skipped="event no longer exists")
        if verdict.judged_at is None:
            return Item(verdict.event_id, skipped="not judged yet")
        if verdict.error is not None:
            return Item(verdict.event_id, skipped="judging failed")
        return event_item(
            event,
            verdict.event_id,
            campaign_id=self.campaign_id,
            judge_name=judge,
            answer=verdict.answer,
            analysis=verdict.analysis,
        )


def campaign(db: Database, tenant: Tenant, params: dict[str, Any]) -> Source:
    return _Campaign(db, tenant, str(params["campaign_id"]))


def record_of_line(line: bytes, number: int) -> Item:
    """A JSONL line as a record: `{"payload": {...}, "properties": {...}}` (what the export
    writes) or a bare conversation `{"messages": [...]}` (a fine-tuning or batch line)."""
    where = f"line {number}"
    try:
        doc = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        raise ImportFailed(f"{where}: invalid JSON ({exc})") from exc
    try:
        check_json(doc)  # what a record could not store
    except JsonProblem as exc:
        path = ".".join(str(part) for part in exc.loc)
        raise ImportFailed(f"{where}: {path or 'document'}: {exc.message}") from exc
    if not isinstance(doc, dict):
        raise ImportFailed(f"{where}: not a JSON object")
    payload: Any = doc
    properties: Any = None
    if "payload" in doc:
        payload, properties = doc["payload"], doc.get("properties")
    if not isinstance(payload, dict):
        raise ImportFailed(f"{where}: `payload` must be an object")
    if properties is None:
        properties = {}
    if not isinstance(properties, dict):
        raise ImportFailed(f"{where}: `properties` must be an object")
    try:
        check_payload(payload)
    except ObservabilityError as exc:
        raise ImportFailed(f"{where}: {exc.message}") from exc
    return Item(f"line:{number}", payload, properties, "UPLOADED_FILE")


@dataclass
class _File:
    """The non-blank lines of an uploaded JSONL file. The whole file is checked first: one bad
    line fails the import before any record is written."""

    blobs: BlobStore
    blob_key: str
    file_id: str

    async def _lines(self) -> AsyncIterator[tuple[int, bytes]]:
        buffer = bytearray()
        number = 0
        try:
            chunks = self.blobs.get(self.blob_key)
            async for chunk in chunks:
                buffer += chunk
                while (end := buffer.find(b"\n")) >= 0:
                    number += 1
                    line = bytes(buffer[:end])
                    del buffer[: end + 1]
                    if line.strip():
                        yield number, line
                if len(buffer) > MAX_LINE_BYTES:
                    raise ImportFailed(f"line {number + 1} is longer than {MAX_LINE_BYTES} bytes")
        except KeyError as exc:
            raise ImportFailed(f"the content of file {self.file_id} is no longer stored") from exc
        if buffer.strip():
            yield number + 1, bytes(buffer)

    async def total(self) -> int:
        count = 0
        async for number, line in self._lines():
            record_of_line(line, number)
            count += 1
            if count > MAX_FILE_RECORDS:
                raise ImportFailed(f"the file has more than {MAX_FILE_RECORDS} records")
        if count == 0:
            raise ImportFailed(f"file {self.file_id} has no records")
        return count

    async def batches(self) -> AsyncIterator[list[Item]]:
        batch: list[Item] = []
        async for number, line in self._lines():
            batch.append(record_of_line(line, number))
            if len(batch) == BATCH:
                yield batch
                batch = []
        if batch:
            yield batch


def file_source(blobs: BlobStore) -> SourceFactory:
    def make(db: Database, tenant: Tenant, params: dict[str, Any]) -> Source:
        return _File(blobs, str(params["blob_key"]), str(params["file_id"]))

    return make
