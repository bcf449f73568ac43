"""The `document_library` tool: hybrid retrieval (vectors and keywords) over the libraries a
tool entry names, among those the caller may read; the answer cites documents and pages.

The query is embedded with no session open; the libraries the caller may read are read before,
and the search runs after, each in a short session of its own.
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
        """Every library the entry names exists and the caller may read it (404 otherwise, as
        for any foreign id)."""
        from maestrale.libraries.repository import LibraryRepository

        wanted = library_ids(entry)
        readable = set(await LibraryRepository(session, tenant).readable_ids(wanted))
        for library_id in wanted:
            if library_id not in readable:
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
        from maestrale.libraries.index import search
        from maestrale.libraries.ingest.embedding import embed_query
        from maestrale.libraries.repository import LibraryRepository

        query = arguments.get("query")
        if not isinstance(query, str) or not query.strip():
            return ToolOutcome("", error="`query` must be a non-empty string")
        query = query[:MAX_QUERY_CHARS]
        services, tenant = context.services, context.tenant
        async with services.db.transaction() as work:
            libraries = LibraryRepository(work.session, tenant)
            readable = await libraries.readable_ids(library_ids(context.entry))
        if not readable:
            return ToolOutcome("", error="none of the tool's libraries can be read any more")
        vector, model, _ = await embed_query(services, query)
        async with services.db.transaction() as work:
            hits = await search(
                work.session,
                library_ids=readable,
                query=query,
                vector=vector,
                model=model,
                limit=RESULTS,
            )
            libraries = LibraryRepository(work.session, tenant)
            names = await libraries.document_names([hit.document_id for hit in hits])
        return outcome(query, hits, names)


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
