"""web_search and web_search_premium against a SearxNG-compatible server the tests run: results
numbered and cited, pages read as text, the SSRF guard on result URLs, hostile backends."""

from __future__ import annotations

import time
from typing import Any

import pytest
from fastapi import FastAPI

from maestrale.core import fetch
from maestrale.core.auth.principal import Tenant
from maestrale.services import Services
from maestrale.tools.web import WebSearch
from tests.support.live import free_port
from tests.tools.web.contexts import tool_context
from tests.tools.web.search_server import SearchProbe

Server = tuple[str, SearchProbe]


@pytest.fixture
def services(app: FastAPI) -> Services:
    services: Services = app.state.services
    return services


async def search(
    services: Services,
    tenant: Tenant,
    query: Any,
    *,
    premium: bool = False,
    **settings: Any,
) -> Any:
    tool = WebSearch(premium=premium)
    context = tool_context(services, tenant, tool.type, **settings)
    return await tool.run(context, {"query": query})


async def test_unavailable_without_a_backend(services: Services, tenant: Tenant) -> None:
    for tool in (WebSearch(), WebSearch(premium=True)):
        reason = tool.unavailable(services.settings)
        assert reason is not None
        assert "MAESTRALE_WEB_SEARCH_URL" in reason
        context = tool_context(services, tenant, tool.type, web_search_url="http://x.test")
        assert tool.unavailable(context.services.settings) is None
    outcome = await search(services, tenant, "anything")
    assert outcome.error is not None
    assert "MAESTRALE_WEB_SEARCH_URL" in outcome.error


def test_offered_functions() -> None:
    plain, premium = WebSearch().offer({"type": "web_search"}), WebSearch(premium=True).offer({})
    assert (plain.name, premium.name) == ("web_search", "web_search_premium")
    assert plain.parameters["required"] == ["query"]
    assert plain.definition()["function"]["parameters"]["properties"]["query"]["type"] == "string"
    assert plain.source == {"tool": "web_search"}


async def test_results_are_numbered_and_cited(
    services: Services, tenant: Tenant, search_server: Server
) -> None:
    base, probe = search_server
    read_before = probe.hits["article"]
    outcome = await search(services, tenant, "  maestrale \n wind ", web_search_url=base)
    assert outcome.error is None, outcome.output
    assert probe.queries[-1] == "maestrale wind"
    # Malformed, duplicate and non-http results are dropped; pages are not read by default.
    urls = [f"{base}/pages/{name}" for name in ("article", "plain", "image", "missing", "latin1")]
    assert [r["url"] for r in outcome.references] == urls
    assert outcome.info["query"] == "maestrale wind"
    assert outcome.info["backend"] == "searxng"
    assert [r["url"] for r in outcome.info["results"]] == urls
    assert not any(r["page_read"] for r in outcome.info["results"])
    assert probe.hits["article"] == read_before
    assert (
        f"[1] Maestrale - a wind — {base}/pages/article: The maestrale is a wind." in outcome.output
    )
    assert f"[5] {base}/pages/latin1 — {base}/pages/latin1: Café" in outcome.output
    assert outcome.references[0] == {
        "type": "tool_reference",
        "tool": "web_search",
        "title": "Maestrale - a wind",
        "url": f"{base}/pages/article",
        "favicon": None,
        "description": "The maestrale is a wind.",
    }
    assert outcome.files == []


async def test_premium_reads_the_pages(
    services: Services, tenant: Tenant, search_server: Server
) -> None:
    base, _ = search_server
    outcome = await search(
        services, tenant, "maestrale wind", premium=True, web_search_url=base,
        web_search_allow_private=True,
    )  # fmt: skip
    assert outcome.error is None, outcome.output
    text = outcome.output
    assert "It blows over Sardinia and Corsica." in text
    assert "north-westerly wind of the\nMediterranean" not in text  # lines joined inside blocks
    assert "north-westerly wind of the Mediterranean." in text
    for noise in ("script text", "Home | About", "Copyright footer", "color: red"):
        assert noise not in text
    article, plain, image, missing, latin1 = outcome.references
    assert article["tool"] == "web_search_premium"
    assert article["favicon"] == f"{base}/static/favicon.ico"
    assert article["description"] == "The maestrale is a wind."
    assert "A plain text page about the mistral" in text
    assert plain["favicon"] is None
    # A result whose page is no text, or is gone, keeps the backend's snippet.
    details = outcome.info["results"]
    assert details[2]["page_read"] is False
    assert "not a text page (image/png)" in details[2]["page_error"]
    assert image["description"] == "An image."
    assert "HTTP 404" in details[3]["page_error"]
    assert missing["description"] == "A 404."
    # A result with no title takes its page's; a cp1252 page declared by its meta tag reads well.
    assert latin1["title"] == "Café"
    assert "Un café crème, s'il vous plaît." in text


async def test_page_reading_and_counts_follow_the_settings(
    services: Services, tenant: Tenant, search_server: Server
) -> None:
    base, _ = search_server
    outcome = await search(
        services, tenant, "maestrale wind", web_search_url=base, web_search_allow_private=True,
        web_search_fetch_pages=True, web_search_results=2, web_search_page_chars=100,
    )  # fmt: skip
    assert outcome.error is None, outcome.output
    assert len(outcome.references) == 2
    assert all(r["page_read"] for r in outcome.info["results"])
    assert "Corsica" not in outcome.output  # past the first 100 characters of the page
    assert "It blows over Sardinia and …" in outcome.output
    assert "The maestrale is a north-westerly wind" in outcome.output
    many = await search(
        services, tenant, "many", premium=True, web_search_url=base,
        web_search_allow_private=True, web_search_premium_results=3,
    )  # fmt: skip
    assert [r["title"] for r in many.references] == ["Page 0", "Page 1", "Page 2"]
    assert "page n2" in many.output


async def test_nothing_found(services: Services, tenant: Tenant, search_server: Server) -> None:
    base, _ = search_server
    outcome = await search(services, tenant, "no such thing", web_search_url=base)
    assert outcome.error is None
    assert outcome.output == "The web search for 'no such thing' found nothing."
    assert outcome.references == []
    assert outcome.info["results"] == []


async def test_result_pages_on_private_addresses_are_not_fetched(
    services: Services, tenant: Tenant, search_server: Server
) -> None:
    """The backend is operator configuration (on loopback here), the results' URLs are not: the
    cloud metadata address, IPv4-mapped loopback and metadata, a name resolving to loopback and
    the loopback server itself are all refused."""
    base, probe = search_server
    outcome = await search(services, tenant, "cloud metadata", premium=True, web_search_url=base)
    assert outcome.error is None, outcome.output
    details = outcome.info["results"]
    assert len(details) == 5
    for detail in details:
        assert detail["page_read"] is False
        assert "loopback, private, link-local or reserved" in detail["page_error"], detail
    assert probe.hits["secret"] == 0
    assert probe.hits["redirect-secret"] == 0
    assert "secret of the private network" not in outcome.output
    # The results are still cited, with the backend's words only.
    assert len(outcome.references) == 5


async def test_a_redirect_to_a_private_address_is_refused(
    services: Services, tenant: Tenant, search_server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the test server's own address standing for a public host, a page that redirects to
    the IPv4-mapped form of loopback is refused at that hop."""
    base, probe = search_server
    judge = fetch.address_allowed

    def public_test_server(address: str, policy: fetch.FetchPolicy) -> bool:
        return address == "127.0.0.1" or judge(address, policy)

    monkeypatch.setattr(fetch, "address_allowed", public_test_server)
    redirects = probe.hits["redirect-secret"]
    outcome = await search(services, tenant, "redirect", premium=True, web_search_url=base)
    assert outcome.error is None, outcome.output
    article, redirect = outcome.info["results"]
    assert article["page_read"] is True
    assert redirect["page_read"] is False
    assert "loopback, private, link-local or reserved" in redirect["page_error"]
    assert probe.hits["redirect-secret"] == redirects + 1
    assert probe.hits["secret"] == 0


@pytest.mark.parametrize(
    ("mode", "message"),
    [
        ("huge", "the search backend answered more than 1048576 bytes"),
        ("deep", "not JSON"),
        ("html", "not JSON"),
        ("error", "the search backend answered HTTP 500: the engines exploded"),
        ("not-a-list", "no `results` list"),
        ("list", "no `results` list"),
        ("slow", "the search backend did not answer within 1 s"),
        ("drip", "the search backend did not answer within 1 s"),
    ],
)
async def test_hostile_backends_give_errors(
    services: Services, tenant: Tenant, search_server: Server, mode: str, message: str
) -> None:
    base, _ = search_server
    started = time.monotonic()
    outcome = await search(
        services, tenant, "anything", web_search_url=f"{base}/hostile/{mode}",
        web_search_timeout_seconds=1.0, web_search_max_response_bytes=1024 * 1024,
    )  # fmt: skip
    assert outcome.error is not None
    assert message in outcome.error
    assert outcome.output == f"error: {outcome.error}"
    assert outcome.info["query"] == "anything"
    assert outcome.references == []
    # Bounded by the 1 s limit (the bound is loose for a loaded machine).
    assert time.monotonic() - started < 30


async def test_a_backend_that_is_down(services: Services, tenant: Tenant) -> None:
    outcome = await search(services, tenant, "q", web_search_url=f"http://127.0.0.1:{free_port()}")
    assert outcome.error is not None
    assert outcome.error.startswith("the search backend cannot be reached")


async def test_oversized_result_fields_are_cut(
    services: Services, tenant: Tenant, search_server: Server
) -> None:
    base, _ = search_server
    outcome = await search(services, tenant, "long strings", web_search_url=base)
    assert outcome.error is None
    (reference,) = outcome.references
    assert reference["title"] == "T" * 300
    assert len(reference["description"]) <= 300
    assert "\x00" not in reference["description"]
    assert len(outcome.output) < 2000


@pytest.mark.parametrize("query", [None, 42, "", "   ", "x" * 1001])
async def test_bad_queries(services: Services, tenant: Tenant, query: Any) -> None:
    outcome = await search(services, tenant, query, web_search_url="http://127.0.0.1:9")
    assert outcome.error is not None
    assert "`query`" in outcome.error
