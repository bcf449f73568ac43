"""Search backends of the web_search tools: a small Protocol, and its SearxNG implementation
(the JSON API that SearxNG and compatible services answer)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlsplit

from maestrale.tools.web.upstream import UpstreamError, request_json

if TYPE_CHECKING:
    from maestrale.config import Settings

# What is kept of a result: its URL (longer ones are dropped), title and snippet.
MAX_URL_CHARS = 2048
MAX_TITLE_CHARS = 300
MAX_SNIPPET_CHARS = 1000
# Results of one answer looked at, however many it holds.
_SCANNED = 200


@dataclass(frozen=True, slots=True)
class SearchResult:
    """One result of a search: a page, its title and the backend's snippet of it."""

    url: str
    title: str
    snippet: str


class SearchBackend(Protocol):
    """A web search service the web_search tools query."""

    name: str  # recorded in the tool's entries

    async def search(self, query: str, *, count: int) -> list[SearchResult]:
        """Up to `count` results for `query`, best first (fewer when the backend has fewer).
        Raises `UpstreamError` when the backend is unreachable, slow, failing or answers
        something that is not a result list."""
        ...


class SearxngBackend:
    """SearxNG's search API: `GET {base}/search?q=...&format=json` answers `{"results": [{"url",
    "title", "content", ...}]}`. The JSON format must be enabled in the instance's settings.yml
    (`search.formats`), or it answers 403."""

    name = "searxng"

    def __init__(self, base_url: str, *, timeout: float, max_bytes: int) -> None:
        self.endpoint = base_url.rstrip("/") + "/search"
        self.timeout = timeout
        self.max_bytes = max_bytes

    async def search(self, query: str, *, count: int) -> list[SearchResult]:
        answer = await request_json(
            "GET",
            self.endpoint,
            label="the search backend",
            params={"q": query, "format": "json", "pageno": "1"},
            timeout=self.timeout,
            max_bytes=self.max_bytes,
        )
        results = answer.get("results") if isinstance(answer, dict) else None
        if not isinstance(results, list):
            raise UpstreamError("the search backend's answer has no `results` list")
        return parse_results(results, count)


def parse_results(items: list[Any], count: int) -> list[SearchResult]:
    """The first `count` well-formed results (an http(s) `url`), one per URL."""
    found: list[SearchResult] = []
    seen: set[str] = set()
    for item in items[:_SCANNED]:
        if len(found) >= count:
            break
        if not isinstance(item, dict):
            continue
        url = item.get("url")
        if not isinstance(url, str) or not web_url(url) or url in seen:
            continue
        seen.add(url)
        title = clean_text(item.get("title"), MAX_TITLE_CHARS) or url
        snippet = clean_text(item.get("content"), MAX_SNIPPET_CHARS)
        found.append(SearchResult(url=url, title=title, snippet=snippet))
    return found


def web_url(url: str) -> bool:
    """An absolute http(s) URL with a host, of a sane length and with no blank or control
    character in it."""
    if len(url) > MAX_URL_CHARS or any(ch.isspace() or not ch.isprintable() for ch in url):
        return False
    try:
        parts = urlsplit(url)
        return parts.scheme in ("http", "https") and bool(parts.hostname)
    except ValueError:
        return False


def clean_text(value: object, limit: int) -> str:
    """A string on one line, without control characters, at most `limit` characters."""
    if not isinstance(value, str):
        return ""
    text = " ".join(value[: limit * 4].split())
    text = "".join(ch for ch in text if ch.isprintable())
    return text[:limit]


def make_backend(settings: Settings) -> SearchBackend | None:
    """The configured backend, or None when `web_search_url` is unset."""
    if not settings.web_search_url:
        return None
    # `web_search_backend` names the protocol: only SearxNG's today.
    return SearxngBackend(
        settings.web_search_url,
        timeout=settings.web_search_timeout_seconds,
        max_bytes=settings.web_search_max_response_bytes,
    )
