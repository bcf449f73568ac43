"""The campaigns page in a real browser: start a campaign over the events a filter selects,
follow its status to the end, list its events and collect its verdicts (through a dataset, the
API's way of handing them out)."""

from __future__ import annotations

from playwright.async_api import Page, expect

from tests.console.conftest import shot, signed_in
from tests.console.events import XSS, client, make_events, marker

TONE = {
    "type": "CLASSIFICATION",
    "options": [
        {"value": "polite", "description": "polite"},
        {"value": "rude", "description": "rude"},
    ],
}


async def test_start_a_campaign_follow_it_and_read_its_results(
    page: Page, console_url: str
) -> None:
    suite = marker()
    await make_events(console_url, suite, [f"{suite} one {XSS}", f"{suite} two", "other"])
    judge = f"Tone {marker()}"
    async with client(console_url) as api:
        body = {
            "name": judge,
            "description": "",
            "model_name": "maestrale-echo",
            "instructions": "Is it polite?",
            "tools": [],
            "output": TONE,
        }
        assert (await api.post("/v1/observability/judges", json=body)).status_code == 201
    await signed_in(page)
    await page.get_by_role("link", name="Campaigns").click()
    await expect(page.locator("main h1")).to_have_text("Campaigns")
    await page.get_by_role("button", name="New campaign").click()
    form = page.get_by_role("form", name="New campaign")
    name = f"Tone check {marker()} {XSS}"
    await form.get_by_label("Name").fill(name)
    await form.get_by_label("Judge").select_option(label=judge)
    await form.get_by_label("Message text contains").fill(suite)
    # And a condition of the builder: this run's events.
    await form.get_by_role("button", name="Add condition").click()
    cond = form.locator(".cond")
    await cond.get_by_label("Field").select_option("extra_fields.suite")
    await cond.get_by_label("Operator").select_option("eq")
    await cond.get_by_label("Value").fill(suite)
    await form.get_by_role("button", name="Start campaign").click()

    await expect(page.locator("#campaign-name")).to_have_text(name)
    await expect(page.get_by_text("2 events selected.")).to_be_visible()
    await expect(page.locator("#campaign-status")).to_have_text("COMPLETED", timeout=60_000)
    row = page.locator("tr", has=page.get_by_role("button", name=name))
    await expect(row).to_contain_text("COMPLETED")
    await page.get_by_role("button", name="Collect results into a new dataset").click()
    verdicts = page.locator("table.verdicts tbody tr")
    await expect(verdicts).to_have_count(2, timeout=60_000)
    await expect(verdicts.first).to_contain_text("polite")
    await expect(page.locator("table.answer-counts")).to_contain_text("polite")
    await expect(page.locator("#campaign-results")).to_contain_text("2 verdicts in")
    assert await page.locator("main img, main script").count() == 0
    await shot(page, "campaigns")

    # No event matches: the API's refusal, as returned.
    await page.get_by_role("button", name="New campaign").click()
    form = page.get_by_role("form", name="New campaign")
    await form.get_by_label("Name").fill("nothing")
    await form.get_by_label("Message text contains").fill(f"absent {marker()}")
    await form.get_by_role("button", name="Start campaign").click()
    await expect(form.locator(".error")).to_contain_text("CAMPAIGN_NO_MATCHING_EVENTS")
