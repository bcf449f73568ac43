"""The POST's `application/x-ndjson` stream: a SummaryMetadata line, then SummaryChunk lines
whose contents joined are the summary, or a SummaryError line.

A generation is followed by polling its row (short sessions, every `POLL_SECONDS`) until it
ends, `WAIT_SECONDS` at most: the job runs whether the client stays or not, and a client that
comes back later gets what it stored (GET, or POST again)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from typing import Any

import orjson
from fastapi.responses import StreamingResponse

from maestrale.core.db import Database
from maestrale.core.jobs.queue import JobQueue
from maestrale.core.jobs.tables import JobStatus
from maestrale.search_indexes.summaries.repository import FAILED, RUNNING, SummaryRepository
from maestrale.search_indexes.summaries.schemas import SummaryOut
from maestrale.search_indexes.summaries.service import Plan

MEDIA_TYPE = "application/x-ndjson"
POLL_SECONDS = 0.2
WAIT_SECONDS = 240.0
# Characters of the summary per SummaryChunk line.
PIECE_CHARS = 1_000


def line(document: dict[str, Any]) -> bytes:
    return orjson.dumps(document) + b"\n"


def content_lines(content: str) -> Iterator[bytes]:
    for start in range(0, len(content), PIECE_CHARS):
        yield line({"content": content[start : start + PIECE_CHARS]})


def error_line(message: str) -> bytes:
    return line({"error": message})


def stored(summary: SummaryOut) -> Iterator[bytes]:
    yield line({"status": summary.status, "translated": summary.translated})
    yield from content_lines(summary.content)


async def follow(db: Database, plan: Plan, *, wait: float = WAIT_SECONDS) -> AsyncIterator[bytes]:
    """The lines of the generation `plan.job_id`, as it ends (or a later one that took its
    place: a forced generation, a summary written by hand)."""
    yield line({"status": "generated", "translated": False})
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait
    job_id = plan.job_id
    while True:
        async with db.transaction() as work:
            row = await SummaryRepository(work.session, plan.index_id).get(plan.language)
            job = None
            if row is not None and row.generation == RUNNING and row.job_id:
                job = await JobQueue(db).get(work.session, row.job_id)
        if row is None:
            yield error_line("the search index was deleted while its summary was generated")
            return
        if row.generation == RUNNING and row.job_id != job_id:
            job_id = row.job_id  # a forced generation took over: its result is the summary
        elif row.generation != RUNNING:
            if row.generation == FAILED and row.job_id == job_id:
                yield error_line(f"the summary could not be generated: {row.error}")
            elif row.status is None:
                yield error_line("the summary generation stopped without a summary")
            else:
                for piece in content_lines(row.content):
                    yield piece
            return
        elif job is None or job.status in JobStatus.FINAL:
            yield error_line("the summary generation stopped without a summary: try again")
            return
        if loop.time() >= deadline:
            yield error_line(
                f"the summary is still being generated after {wait:.0f} s: read it later "
                "(GET), or POST again to follow it"
            )
            return
        await asyncio.sleep(POLL_SECONDS)


def summary_stream(db: Database, plan: Plan) -> StreamingResponse:
    """The response of a POST: the stored summary, or the generation followed."""
    if plan.stored is not None:
        return StreamingResponse(_sent(list(stored(plan.stored))), media_type=MEDIA_TYPE)
    return StreamingResponse(follow(db, plan), media_type=MEDIA_TYPE)


async def _sent(lines: list[bytes]) -> AsyncIterator[bytes]:
    for one in lines:
        yield one
