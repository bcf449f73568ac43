"""The admin usage page in a real browser: an SVG bar chart per month and model (built with DOM
calls), the same numbers in a table, metric switched."""

from __future__ import annotations

from playwright.async_api import Page, expect

from tests.console.conftest import shot, signed_in
from tests.console.events import make_events, marker


async def test_usage_chart_per_month_and_model(page: Page, console_url: str) -> None:
    await make_events(console_url, marker(), ["count me"])
    await signed_in(page, admin=True)
    await page.get_by_role("link", name="Usage").click()
    await expect(page.locator("main h1")).to_have_text("Usage")
    chart = page.locator("svg.usage-chart")
    await expect(chart).to_be_visible()
    bar = chart.locator("rect.bar[data-model='maestrale-echo']")
    await expect(bar).to_have_count(1)  # this month (the organization is new)
    assert float(await bar.get_attribute("height") or 0) > 0
    await expect(page.locator("figcaption")).to_have_text("Tokens per month and model")
    table = page.locator("table", has_text="Usage per month and model")
    await expect(table.locator("tbody tr", has_text="maestrale-echo")).to_have_count(1)
    await page.get_by_label("Metric").select_option("requests")
    await expect(page.locator("figcaption")).to_have_text("Requests per month and model")
    await shot(page, "admin-usage")
