"""What the cluster stored, read from its Postgres (read-only) and through the load balancer: the
writes of the load found by their markers, a batch's lines, a campaign's verdicts, a job's lease."""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import httpx
import orjson
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.pool import NullPool

from bench.cluster.load import Call

COUNTS = {
    "chat": "SELECT correlation_id, count(*) FROM chat_completion_events"
    " WHERE correlation_id = ANY(:m) GROUP BY 1",
    "conversation": "SELECT name, count(*) FROM conversations WHERE name = ANY(:m) GROUP BY 1",
    "upload": "SELECT filename, count(*) FROM files WHERE filename = ANY(:m) GROUP BY 1",
}


def _stored_name(call: Call) -> str:
    return f"{call.marker}.jsonl" if call.op == "upload" else call.marker


@dataclass
class Writes:
    """The load's writes in a window, against what was stored."""

    acknowledged: int = 0
    lost: list[Call] = field(default_factory=list)  # acknowledged, not stored (or not readable)
    duplicated: list[Call] = field(default_factory=list)  # stored more than once
    failed_but_stored: list[Call] = field(default_factory=list)  # the client saw an error

    def lost_except(self, excused: set[Call]) -> list[Call]:
        return [c for c in self.lost if c not in excused]


class Store:
    def __init__(self, database_url: str, client: httpx.AsyncClient) -> None:
        # No pool: a connection per look, so that a Postgres restart leaves none stale.
        self.engine = create_async_engine(database_url, poolclass=NullPool)
        self.client = client

    async def close(self) -> None:
        await self.engine.dispose()

    async def rows(self, sql: str, **params: Any) -> list[Any]:
        async with self.engine.connect() as conn:
            return list((await conn.execute(text(sql), params)).all())

    async def writes(self, calls: list[Call]) -> Writes:
        """Each write of `calls` looked up by its marker; acknowledged uploads read back."""
        result = Writes()
        found: Counter[tuple[str, str]] = Counter()
        for op, sql in COUNTS.items():
            names = [_stored_name(c) for c in calls if c.op == op]
            for name, count in await self.rows(sql, m=names) if names else []:
                found[(op, name)] = count
        for call in calls:
            if not call.writes:
                continue
            count = found[(call.op, _stored_name(call))]
            if call.ok:
                result.acknowledged += 1
                if count == 0:
                    result.lost.append(call)
            elif count:
                result.failed_but_stored.append(call)
            if count > 1:
                result.duplicated.append(call)
        uploads = [c for c in calls if c.op == "upload" and c.ok and c not in result.lost]
        unreadable = await self._unreadable(uploads)
        result.lost += unreadable
        return result

    async def _unreadable(self, uploads: list[Call]) -> list[Call]:
        """Uploads whose content does not come back intact (the blob is in S3)."""
        gate = asyncio.Semaphore(4)

        async def bad(call: Call) -> bool:
            async with gate:
                resp = await self.client.get(f"/v1/files/{call.resource}/content")
            return resp.status_code != 200 or resp.content != call.content

        flags = await asyncio.gather(*(bad(c) for c in uploads))
        return [c for c, flag in zip(uploads, flags, strict=True) if flag]

    # -- jobs --------------------------------------------------------------------------------
    async def job(self, job_id: str) -> dict[str, Any]:
        [row] = await self.rows(
            "SELECT status, attempts, lease_owner FROM jobs WHERE id = :id", id=job_id
        )
        return {"status": row[0], "attempts": row[1], "lease_owner": row[2]}

    async def batch(self, batch_id: str) -> dict[str, Any]:
        [row] = await self.rows(
            "SELECT status, completed_requests, total_requests, job_id FROM batch_jobs"
            " WHERE id = :id",
            id=batch_id,
        )
        return {"status": row[0], "completed": row[1], "total": row[2], "job_id": row[3]}

    async def batch_lines(self, batch_id: str) -> Counter[str]:
        """custom_id → how many times it appears in the batch's output and error files."""
        job = (await self.client.get(f"/v1/batch/jobs/{batch_id}")).json()
        seen: Counter[str] = Counter()
        for file_id in (job.get("output_file"), job.get("error_file")):
            if not file_id:
                continue
            resp = await self.client.get(f"/v1/files/{file_id}/content")
            resp.raise_for_status()
            seen.update(str(orjson.loads(line)["custom_id"]) for line in resp.content.splitlines())
        return seen

    async def batch_rows(self, batch_id: str) -> int:
        [(count,)] = await self.rows(
            "SELECT count(*) FROM batch_results WHERE batch_id = :id", id=batch_id
        )
        return int(count)

    async def line_calls(self, batch_id: str) -> Counter[str]:
        """custom_id → model calls recorded for that line of the batch (a line in flight when
        its worker died runs again: its result is still written once)."""
        rows = await self.rows(
            "SELECT extra_fields->>'custom_id', count(*) FROM chat_completion_events"
            " WHERE correlation_id = :id GROUP BY 1",
            id=batch_id,
        )
        return Counter({str(name): int(count) for name, count in rows})

    async def judge_calls(self, since: datetime) -> Counter[str]:
        """Judge calls recorded since `since`, by the conversation they judged."""
        rows = await self.rows(
            "SELECT md5(request_messages::text), count(*) FROM chat_completion_events"
            " WHERE source = 'judge' AND created_at >= :t GROUP BY 1",
            t=since,
        )
        return Counter({str(name): int(count) for name, count in rows})

    async def campaign(self, campaign_id: str) -> dict[str, Any]:
        [row] = await self.rows(
            "SELECT status, job_id, (SELECT count(*) FROM observability_campaign_events e"
            " WHERE e.campaign_id = c.id), (SELECT count(*) FROM observability_campaign_events e"
            " WHERE e.campaign_id = c.id AND e.judged_at IS NOT NULL),"
            " (SELECT count(*) FROM observability_campaign_events e"
            " WHERE e.campaign_id = c.id AND e.error IS NOT NULL)"
            " FROM observability_campaigns c WHERE c.id = :id",
            id=campaign_id,
        )
        return {
            "status": row[0],
            "job_id": row[1],
            "selected": int(row[2]),
            "judged": int(row[3]),
            "errors": int(row[4]),
        }
