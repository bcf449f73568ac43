"""The event explorer in a real browser: the filter builder (fields and operators of the API,
nested AND/OR groups), full-text search of the messages, cursor paging, an event's detail with
its messages shown literally, similar events, the API's errors as returned; and the phone
layout."""

from __future__ import annotations

import re

from playwright.async_api import Page, expect

from tests.console.conftest import shot, signed_in
from tests.console.events import XSS, client, make_events, marker


async def test_filters_text_search_paging_detail_and_similar_events(
    page: Page, console_url: str
) -> None:
    suite = marker()
    texts = [f"needle {XSS}"] + [f"message {n}" for n in range(1, 25)]
    await make_events(console_url, suite, texts)
    await signed_in(page)
    await page.get_by_role("link", name="Observability").click()
    await expect(page.locator("main h1")).to_have_text("Observability")
    rows = page.locator("table.events tbody tr")

    # One condition: this run's events, 25 of them, 20 a page.
    await page.get_by_role("button", name="Add condition").click()
    cond = page.locator(".cond").nth(0)
    await cond.get_by_label("Field").select_option("extra_fields.suite")
    await cond.get_by_label("Operator").select_option("eq")
    await cond.get_by_label("Value").fill(suite)
    await page.get_by_role("button", name="Search", exact=True).click()
    await expect(rows).to_have_count(20)
    await page.get_by_role("button", name="Next page").click()
    await expect(page.get_by_text("Page 2")).to_be_visible()
    await expect(rows).to_have_count(5)
    await expect(page.get_by_role("button", name="Next page")).to_have_count(0)
    await page.get_by_role("button", name="Previous page").click()
    await expect(rows).to_have_count(20)

    # A nested OR group: suite = this run AND (n = 0 OR n >= 23).
    await page.get_by_role("button", name="Add group").first.click()
    group = page.locator("fieldset.filter-group fieldset.filter-group")
    await group.get_by_label("Combine with").select_option("OR")
    await group.get_by_role("button", name="Add condition").click()
    await group.get_by_role("button", name="Add condition").click()
    first, second = group.locator(".cond").nth(0), group.locator(".cond").nth(1)
    await first.get_by_label("Field").select_option("extra_fields.n")
    await first.get_by_label("Operator").select_option("eq")
    await first.get_by_label("Value").fill("0")
    await second.get_by_label("Field").select_option("extra_fields.n")
    await second.get_by_label("Operator").select_option("gte")
    await second.get_by_label("Value").fill("23")
    await page.get_by_role("button", name="Search", exact=True).click()
    await expect(rows).to_have_count(3)
    await shot(page, "observability")

    # Full-text search of the messages, with the suite condition.
    await page.get_by_role("button", name="Remove group").click()
    await page.get_by_label("Search message text").fill("onerror")
    await page.get_by_role("button", name="Search", exact=True).click()
    await expect(rows).to_have_count(1)

    # The event's detail: its messages as text, its extra fields; similar events.
    await rows.first.get_by_role("button").click()
    detail = page.locator(".event-detail")
    await expect(detail.locator(".message").first).to_contain_text(f"needle {XSS}")
    await expect(detail).to_contain_text(f"echo: needle {XSS}")
    await expect(detail).to_contain_text(suite)
    assert await page.locator("main img, main script").count() == 0
    await page.get_by_role("button", name="Similar events").click()
    similar = detail.get_by_role("heading", name="Similar events")
    await expect(similar).to_be_visible(timeout=90_000)  # embeds the workspace's events
    await shot(page, "observability-event")

    # Into a dataset (an import from the explorer).
    async with client(console_url) as api:
        body = {"name": f"From the explorer {suite}", "description": ""}
        dataset = (await api.post("/v1/observability/datasets", json=body)).json()
    await page.get_by_role("button", name="Add to a dataset").click()
    await detail.get_by_label("Dataset").select_option(dataset["id"])
    await detail.get_by_role("button", name="Add", exact=True).click()
    await expect(detail.get_by_role("link", name="open the dataset")).to_be_visible()

    # A filter the API refuses: its message, as returned.
    await page.get_by_label("Search message text").fill("")
    await page.get_by_role("button", name="Add condition").first.click()
    bad = page.locator(".cond").nth(1)
    await bad.get_by_label("Field").select_option("correlation_id")
    await bad.get_by_label("Operator").select_option("matches")
    await bad.get_by_label("Value").fill("(")
    await page.get_by_role("button", name="Search", exact=True).click()
    error = page.locator("main .error")
    await expect(error).to_contain_text("invalid regular expression for 'correlation_id'")
    await expect(error).to_contain_text("SEARCH_BAD_REQUEST")

    # Nothing matches: the empty state.
    await page.get_by_role("button", name="Clear").click()
    await page.get_by_label("Search message text").fill(f"absent {marker()}")
    await page.get_by_role("button", name="Search", exact=True).click()
    await expect(page.get_by_text("No event matches these filters.")).to_be_visible()


async def test_the_explorer_on_a_phone(phone_page: Page, console_url: str) -> None:
    suite = marker()
    await make_events(console_url, suite, [f"phone {XSS}"])
    page = await signed_in(phone_page)
    await page.goto("/console/observability")
    await page.get_by_label("Search message text").fill(f"phone {XSS}")
    await page.get_by_role("button", name="Search", exact=True).click()
    await expect(page.locator("table.events tbody tr").first).to_be_visible()
    width = await page.evaluate("document.documentElement.scrollWidth")
    assert width <= 400, f"the page scrolls sideways on a phone ({width}px)"
    await shot(page, "observability-phone")


async def test_value_inputs_follow_each_field_type(page: Page, console_url: str) -> None:
    suite = marker()
    await make_events(console_url, suite, ["zero", "one", "two"])
    await signed_in(page)
    await page.goto("/console/observability")
    rows = page.locator("table.events tbody tr")
    add = page.get_by_role("button", name="Add condition")
    await add.click()
    cond = page.locator(".cond")
    await cond.nth(0).get_by_label("Field").select_option("extra_fields.suite")
    await cond.nth(0).get_by_label("Operator").select_option("eq")
    await cond.nth(0).get_by_label("Value").fill(suite)

    async def second(field: str, op: str, value: str | None, expected: int) -> None:
        await cond.nth(1).get_by_label("Field").select_option(field)
        await cond.nth(1).get_by_label("Operator").select_option(op)
        box = cond.nth(1).get_by_label(re.compile("^Value"))
        if value is not None:
            if await box.evaluate("n => n.tagName") == "SELECT":
                await box.select_option(value)
            else:
                await box.fill(value)
        await page.get_by_role("button", name="Search", exact=True).click()
        await expect(rows).to_have_count(expected)
        await expect(page.locator("main .error")).to_have_count(0)

    await add.click()
    await second("extra_fields.n", "includes", "0, 2", 2)  # a list of numbers
    await second("extra_fields.n", "lt", "1", 1)
    await second("created_at", "gte", "2000-01-01T00:00:00", 3)  # a datetime
    await second("created_at", "lt", "2000-01-01T00:00:00", 0)
    await second("extra_fields.suite", "isnull", "false", 3)  # true / false
    await second("model", "eq", "maestrale-echo", 3)  # an ENUM (its options offered)
    assert "maestrale-echo" in await page.locator(".cond").nth(1).locator("datalist").evaluate(
        "d => [...d.options].map(o => o.value).join(',')"
    )
    await second("request_messages", "len_eq", "1", 3)  # an array length
