"""The web_search and web_search_premium built-in tools: a configurable search backend
(SearxNG's JSON API first), the results' pages read through the SSRF-safe fetcher, sources
cited as `tool_reference` chunks."""

from maestrale.tools.web.backends import SearchBackend, SearchResult, SearxngBackend, make_backend
from maestrale.tools.web.tool import WEB_SEARCH, WEB_SEARCH_PREMIUM, WebSearch

__all__ = [
    "WEB_SEARCH",
    "WEB_SEARCH_PREMIUM",
    "SearchBackend",
    "SearchResult",
    "SearxngBackend",
    "WebSearch",
    "make_backend",
]
