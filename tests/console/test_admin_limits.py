"""The admin limits page in a real browser: the rate limits in force, and the monthly spend
limit set, then removed."""

from __future__ import annotations

from playwright.async_api import Page, expect

from tests.console.conftest import shot, signed_in


async def test_rate_limits_and_the_spend_limit(page: Page) -> None:
    await signed_in(page, admin=True)
    await page.get_by_role("link", name="Limits").click()
    await expect(page.locator("main h1")).to_have_text("Rate and spend limits")
    await expect(page.locator("#rps")).to_have_text("unlimited")
    await expect(page.locator("#spend-limit")).to_have_text("none")
    await page.get_by_label("No monthly limit").uncheck()
    await page.locator("#spend-amount").fill("250")
    await page.get_by_role("button", name="Save").click()
    await expect(page.locator("#spend-limit")).to_have_text("250 USD")
    await expect(page.get_by_role("progressbar", name="Share of the limit spent")).to_be_visible()
    await shot(page, "admin-limits")
    await page.get_by_label("No monthly limit").check()
    await page.get_by_role("button", name="Save").click()
    await expect(page.locator("#spend-limit")).to_have_text("none")
