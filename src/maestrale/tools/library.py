"""The `document_library` tool: hybrid retrieval (vectors and keywords) over the libraries a
tool entry names, among those the caller may read, and over the search indexes of the
workspace it names instead (by id or name: `search_indexes.retrieval_sources`); the answer
cites documents and pages.

The query is embedded (once per embeddings model) with no session open; the libraries and
indexes the caller may read are read before, and the searches run after, each in a short
session of its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from sqlalchemy.ext.asyncio import AsyncSession

from maestrale.conversations.server_tools import ServerTool, ToolOutcome
from maestrale.core.auth.principal import Tenant
from maestrale.core.errors import BadRequest, NotFound
from maestrale.tools.base import ToolContext

if TYPE_CHECKING:
    from maestrale.config import Settings
    from maestrale.libraries.index import Hit
    from maestrale.search_indexes.retrieval_sources import Searched

TYPE = "document_library"
# Passages a search returns to the model, and the longest query it takes.
RESULTS = 8
MAX_QUERY_CHARS = 4_000
# What a passage's citation shows of it.
EXCERPT_CHARS = 300


def library_ids(entry: dict[str, Any]) -> list[str]:
    ids = entry.get("library_ids")
    if not isinstance(ids, list) or not ids or not all(isinstance(i, str) and i for i in ids):
        raise BadRequest(
            "a document_library tool needs `library_ids`, a non-empty list of library ids",
            code="invalid_tool",
            param="tools",
        )
    return list(dict.fromkeys(ids))


class DocumentLibrary:
    """The `document_library` built-in tool."""

    type = TYPE

    def unavailable(self, settings: Settings) -> str | None:
        return None

    async def check(self, session: AsyncSession, tenant: Tenant, entry: dict[str, Any]) -> None:
        """Every library the entry names exists and the caller may read it, or is a serving
        search index of the workspace (404 otherwise, as for any foreign id)."""
        from maestrale.libraries.repository import LibraryRepository
        from maestrale.search_indexes.retrieval_sources import index_sources

        wanted = library_ids(entry)
        readable = set(await LibraryRepository(session, tenant).readable_ids(wanted))
        others = [i for i in wanted if i not in readable]
        indexes = await index_sources(session, tenant, others) if others else {}
        for library_id in others:
            if library_id not in indexes:
                raise NotFound(
                    f"library {library_id[:200]!r} not found",
                    code="library_not_found",
                    param="tools",
                )

    def offer(self, entry: dict[str, Any]) -> ServerTool:
        return ServerTool(
            name=TYPE,
            description=(
                "Search the user's document libraries for passages relevant to a query. Returns "
                "numbered passages with their document and page; cite them by number."
            ),
            parameters={
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "What to look for."},
                },
                "required": ["query"],
            },
            source={"tool": TYPE, "library_ids": entry.get("library_ids") or []},
        )

    async def run(self, context: ToolContext, arguments: dict[str, Any]) -> ToolOutcome:
        from maestrale.libraries.ingest.embedding import embed_query
        from maestrale.libraries.repository import LibraryRepository
        from maestrale.search_indexes import retrieval_sources as sources

        query = arguments.get("query")
        if not isinstance(query, str) or not query.strip():
            return ToolOutcome("", error="`query` must be a non-empty string")
        query = query[:MAX_QUERY_CHARS]
        services, tenant = context.services, context.tenant
        wanted = library_ids(context.entry)
        async with services.db.transaction() as work:
            readable = await LibraryRepository(work.session, tenant).readable_ids(wanted)
            others = [i for i in wanted if i not in readable]
            indexes = await sources.index_sources(work.session, tenant, others) if others else {}
        if not readable and not indexes:
            return ToolOutcome("", error="none of the tool's libraries can be read any more")
        searches = await sources.index_searches(services, list(indexes.values()), query)
        if readable:
            vector, model, _ = await embed_query(services, query)
            searches.insert(0, sources.Searched(readable, vector, model))
        async with services.db.transaction() as work:
            hits = await _search_all(work.session, searches, query)
            found = [hit.document_id for hit in hits]
            names = await LibraryRepository(work.session, tenant).document_names(found)
            if indexes:
                names.update(await sources.source_names(work.session, tenant, found))
        return outcome(query, hits, names)


async def _search_all(session: AsyncSession, searches: Sequence[Searched], query: str) -> list[Hit]:
    """The best `RESULTS` passages of every search (each fused by reciprocal rank: their
    scores compare), best first."""
    from maestrale.libraries.index import search

    hits: list[Hit] = []
    for one in searches:
        hits += await search(
            session,
            library_ids=one.library_ids,
            query=query,
            vector=one.vector,
            model=one.model,
            limit=RESULTS,
        )
    if len(searches) > 1:
        hits.sort(key=lambda hit: -hit.score)
    return hits[:RESULTS]


def outcome(query: str, hits: Sequence[Hit], names: dict[str, str]) -> ToolOutcome:
    """The model's text (numbered passages), the citations and the entry's details."""
    if not hits:
        return ToolOutcome(f"No passage of the libraries matches {query!r}.", info={"results": []})
    lines: list[str] = []
    references: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    for number, hit in enumerate(hits, start=1):
        name = names.get(hit.document_id, hit.document_id)
        lines.append(f"[{number}] {name}, page {hit.page}:\n{hit.text.strip()}")
        references.append(
            {
                "type": "tool_reference",
                "tool": TYPE,
                "title": f"{name} (page {hit.page})",
                "url": None,
                "favicon": None,
                "description": hit.text.strip()[:EXCERPT_CHARS],
            }
        )
        results.append(
            {
                "document_id": hit.document_id,
                "document_name": name,
                "library_id": hit.library_id,
                "page": hit.page,
                "start": hit.start,
                "end": hit.end,
                "score": hit.score,
            }
        )
    return ToolOutcome("\n\n".join(lines), info={"results": results}, references=references)
