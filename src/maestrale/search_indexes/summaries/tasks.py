"""The `search_indexes.summary` job: the chat engine writes an index's summary field in one
language from a sample of its chunks (the first chunks of up to `MAX_DOCUMENTS` documents, at
most `MAX_SAMPLE_CHARS` characters in all).

The row of the summary names the job running its generation: a job that is no longer the one
named (superseded by a forced generation or a write by hand) writes nothing. No session is open
while the model runs: the sample is read in one short transaction, the result written in
another. A refusal (the model's 4xx, an index with nothing to summarise) fails the generation
at once; an outage is retried, and fails it after the last attempt. Either way the row says
`failed` with the reason, which the stream following the job sends as its SummaryError."""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from maestrale.core.errors import AppError
from maestrale.core.jobs.worker import JobContext, JobInterrupted, JobRegistry, PermanentJobError
from maestrale.gateway.hooks import Caller
from maestrale.gateway.platform_calls import PlatformCalls
from maestrale.search_indexes.summaries.repository import (
    FAILED,
    IDLE,
    RUNNING,
    Excerpt,
    SummaryRepository,
)
from maestrale.search_indexes.summaries.schemas import LANGUAGE_NAMES, MAX_CONTENT_BYTES, Language
from maestrale.search_indexes.tables import SearchIndex

KIND = "search_indexes.summary"
ATTEMPTS = 3
TIMEOUT_SECONDS = 300.0
MAX_DOCUMENTS = 50
CHUNKS_PER_DOCUMENT = 3
MAX_SAMPLE_CHARS = 12_000
MAX_TOKENS = 1_000
MAX_ERROR_CHARS = 1_000

log = logging.getLogger("maestrale.search_indexes")

SYSTEM = (
    "You write the summary field of a search index: a short description of what the index "
    "holds (its subjects, the kinds of documents, what questions it can answer), for people "
    "and agents deciding whether to search it. Write it in {language}. Answer with the "
    "summary only: one to three short paragraphs, no heading, no preamble."
)


class NothingToSummarise(Exception):
    """The index has no chunk: there is nothing to describe."""


@dataclass(frozen=True, slots=True)
class Sample:
    index_name: str
    document_count: int
    excerpts: list[Excerpt]


def messages(sample: Sample, language: str) -> list[dict[str, str]]:
    """The chat request's messages: the instructions, then the index's excerpts."""
    share = max(MAX_SAMPLE_CHARS // max(len(sample.excerpts), 1), 1)
    parts = [
        f"Search index {sample.index_name!r}: {sample.document_count} documents. "
        f"The beginnings of {len(sample.excerpts)} of them follow."
    ]
    for excerpt in sample.excerpts:
        parts.append(f"## {excerpt.source_id}\n" + "\n".join(excerpt.texts)[:share])
    name = LANGUAGE_NAMES[Language(language)]
    return [
        {"role": "system", "content": SYSTEM.format(language=name)},
        {"role": "user", "content": "\n\n".join(parts)},
    ]


def reply_text(result: dict[str, Any]) -> str:
    """The summary in a chat completion body, bounded to what a summary may hold."""
    content = result["choices"][0]["message"].get("content")
    if isinstance(content, list):
        content = "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    text = (content or "").strip() if isinstance(content, str) else ""
    if not text:
        raise NothingToSummarise("the model wrote no summary")
    encoded = text.encode("utf-8")[:MAX_CONTENT_BYTES]
    return encoded.decode("utf-8", errors="ignore")


def permanent_reason(exc: BaseException) -> str | None:
    """Why the generation cannot succeed however often it is tried, or None (worth a retry)."""
    if isinstance(exc, NothingToSummarise | ValidationError):
        return str(exc)
    if not isinstance(exc, AppError) or exc.status_code in (408, 429):
        return None
    return exc.message if 400 <= exc.status_code < 500 else None


class SummaryTasks:
    def __init__(self, calls: PlatformCalls) -> None:
        self.calls = calls

    async def run(self, ctx: JobContext) -> dict[str, Any]:
        index_id, language = str(ctx.payload["index_id"]), str(ctx.payload["language"])
        try:
            sample = await self._sample(ctx, index_id, language)
            if sample is None:
                return {"status": "superseded"}
            content = await self._ask(ctx, sample, language)
        except JobInterrupted:
            raise
        except Exception as exc:
            reason = permanent_reason(exc)
            if reason is None and ctx.attempt < ctx.max_attempts:
                raise  # retried after a backoff; the row stays running
            reason = reason or f"{type(exc).__name__}: {exc}"
            log.warning("summary of index %s (%s) failed: %s", index_id, language, reason)
            await self._end(
                ctx, index_id, language, generation=FAILED, error=reason[:MAX_ERROR_CHARS]
            )
            raise PermanentJobError(reason) from exc
        written = await self._end(
            ctx,
            index_id,
            language,
            content=content,
            status="generated",
            translated=False,
            generation=IDLE,
            error=None,
        )
        return {"status": "generated" if written else "superseded", "characters": len(content)}

    async def _sample(self, ctx: JobContext, index_id: str, language: str) -> Sample | None:
        """What to summarise, or None when this job no longer generates the summary."""
        async with ctx.db.transaction() as work:
            index = await work.session.get(SearchIndex, index_id)
            if index is None or index.workspace_id != ctx.tenant.workspace_id:
                return None
            if index.status == "deleting":  # its chunks and summaries are going
                return None
            summaries = SummaryRepository(work.session, index_id)
            row = await summaries.get(language)
            if row is None or row.generation != RUNNING or row.job_id != ctx.job_id:
                return None
            excerpts = await summaries.excerpts(
                documents=MAX_DOCUMENTS, chunks_per_document=CHUNKS_PER_DOCUMENT
            )
            sample = Sample(index.name, index.document_count, excerpts)
        if not sample.excerpts:
            raise NothingToSummarise("the index holds no chunks to summarise")
        return sample

    async def _ask(self, ctx: JobContext, sample: Sample, language: str) -> str:
        tenant = ctx.tenant
        body = {
            "model": str(ctx.payload["model"]),
            "messages": messages(sample, language),
            "temperature": 0.2,
            "max_tokens": MAX_TOKENS,
        }
        result = await self.calls.chat(
            Caller(tenant.organization_id, tenant.workspace_id),
            body,
            correlation_id=f"summary-{uuid.uuid4()}",
            source="search_index_summary",
        )
        return reply_text(result)

    async def _end(self, ctx: JobContext, index_id: str, language: str, **values: Any) -> bool:
        async with ctx.db.transaction() as work:
            return await SummaryRepository(work.session, index_id).finish(
                language, ctx.job_id, **values
            )


def register(registry: JobRegistry, calls: PlatformCalls) -> None:
    registry.register(KIND, SummaryTasks(calls).run, timeout=TIMEOUT_SECONDS)
