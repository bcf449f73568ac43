"""The `web_search` and `web_search_premium` tools: a query to the configured search backend,
then (premium, or `web_search_fetch_pages`) the results' pages read through the SSRF-safe
fetcher; the answer numbers its sources and cites them as `tool_reference` chunks.

`web_search_premium` is the same search, deeper: more sources (`web_search_premium_results`)
and every source's page read, not only the backend's snippet of it. No database session is
used: a search is network calls only.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from maestrale.conversations.server_tools import ServerTool, ToolOutcome
from maestrale.core.errors import AppError
from maestrale.core.fetch import FetchPolicy
from maestrale.tools.base import ToolContext
from maestrale.tools.web.backends import SearchResult, make_backend
from maestrale.tools.web.pages import Page, PageUnreadable, fetch_error, fetch_page
from maestrale.tools.web.upstream import UpstreamError

if TYPE_CHECKING:
    from maestrale.config import Settings

log = logging.getLogger("maestrale.tools.web")

WEB_SEARCH = "web_search"
WEB_SEARCH_PREMIUM = "web_search_premium"
MAX_QUERY_CHARS = 1000
# What a citation's description holds at most (the backend's snippet, else the page's text).
DESCRIPTION_CHARS = 300
UNCONFIGURED = (
    "no search backend is configured: set MAESTRALE_WEB_SEARCH_URL to the base URL of a "
    "SearxNG-compatible search API (JSON format enabled)"
)


class WebSearch:
    """The `web_search` built-in tool; `WebSearch(premium=True)` is `web_search_premium`."""

    def __init__(self, *, premium: bool = False) -> None:
        self.premium = premium
        self.type = WEB_SEARCH_PREMIUM if premium else WEB_SEARCH

    def unavailable(self, settings: Settings) -> str | None:
        return None if settings.web_search_url else UNCONFIGURED

    def offer(self, entry: dict[str, Any]) -> ServerTool:
        reads = (
            "Reads the top results' pages and returns numbered sources with their title, URL "
            "and text"
            if self.premium
            else "Returns numbered sources with their title, URL and an excerpt"
        )
        return ServerTool(
            name=self.type,
            description=(f"Search the web for current information. {reads}; cite them by number."),
            parameters={
                "type": "object",
                "properties": {
                    "query": {
                        "type": "string",
                        "description": "What to search the web for.",
                        "maxLength": MAX_QUERY_CHARS,
                    },
                },
                "required": ["query"],
            },
            source={"tool": self.type},
        )

    async def run(self, context: ToolContext, arguments: dict[str, Any]) -> ToolOutcome:
        query = arguments.get("query")
        if not isinstance(query, str) or not query.strip():
            return failed("`query` must be a non-empty string")
        query = " ".join(query.split())
        if len(query) > MAX_QUERY_CHARS:
            return failed(f"`query` is longer than {MAX_QUERY_CHARS} characters")
        settings = context.services.settings
        backend = make_backend(settings)
        if backend is None:
            return failed(UNCONFIGURED)
        info: dict[str, Any] = {"query": query, "backend": backend.name}
        count = settings.web_search_premium_results if self.premium else settings.web_search_results
        try:
            results = await backend.search(query, count=count)
        except UpstreamError as exc:
            return failed(str(exc), info)
        if self.premium or settings.web_search_fetch_pages:
            pages = await read_pages(results, settings)
        else:
            pages = [None] * len(results)
        return self.outcome(query, results, pages, info)

    def outcome(
        self,
        query: str,
        results: list[SearchResult],
        pages: list[Page | str | None],
        info: dict[str, Any],
    ) -> ToolOutcome:
        """The numbered sources the model reads, their citations, and the entry's details."""
        info["results"] = []
        if not results:
            return ToolOutcome(f"The web search for {query!r} found nothing.", info=info)
        lines: list[str] = []
        references: list[dict[str, Any]] = []
        for number, (result, page) in enumerate(zip(results, pages, strict=True), start=1):
            read = page if isinstance(page, Page) else None
            title = read.title if read and read.title and result.title == result.url else None
            title = title or result.title
            excerpt = read.text if read else result.snippet
            lines.append(f"[{number}] {title} — {result.url}: {excerpt or '(no excerpt)'}")
            description = result.snippet or (read.text[:DESCRIPTION_CHARS] if read else "")
            references.append(
                {
                    "type": "tool_reference",
                    "tool": self.type,
                    "title": title,
                    "url": result.url,
                    "favicon": read.favicon if read else None,
                    "description": description[:DESCRIPTION_CHARS] or None,
                }
            )
            detail: dict[str, Any] = {"url": result.url, "title": title, "page_read": bool(read)}
            if isinstance(page, str):
                detail["page_error"] = page
            info["results"].append(detail)
        head = f"Web search results for {query!r} (cite them by number):"
        return ToolOutcome("\n\n".join([head, *lines]), info=info, references=references)


async def read_pages(results: list[SearchResult], settings: Settings) -> list[Page | str | None]:
    """Each result's page (in parallel), or why it could not be read."""
    policy = FetchPolicy(
        allow_private=settings.web_search_allow_private,
        max_bytes=settings.web_search_page_max_bytes,
        timeout_seconds=settings.web_search_page_timeout_seconds,
    )
    chars = settings.web_search_page_chars

    async def read(url: str) -> Page | str:
        try:
            return await fetch_page(url, policy, chars)
        except (AppError, PageUnreadable, TimeoutError) as exc:
            return fetch_error(exc)
        except Exception as exc:  # a page must not fail the search; cancellation passes
            log.warning("reading %s failed: %s", url[:200], type(exc).__name__, exc_info=True)
            return f"the page could not be read ({type(exc).__name__})"

    return list(await asyncio.gather(*(read(result.url) for result in results)))


def failed(message: str, info: dict[str, Any] | None = None) -> ToolOutcome:
    """A call that failed, as the model reads it."""
    return ToolOutcome(f"error: {message}", error=message, info=info or {})
