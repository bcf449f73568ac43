"""The judges page in a real browser: create a judge, try it on an event picked from the latest
ones and on typed messages, edit it, delete it; names show literally."""

from __future__ import annotations

import re

from playwright.async_api import Page, expect

from tests.console.conftest import shot, signed_in
from tests.console.events import XSS, make_events, marker


async def test_create_try_on_an_event_edit_and_delete_a_judge(page: Page, console_url: str) -> None:
    (event_id,) = await make_events(console_url, marker(), [f"judge me {XSS}"])
    await signed_in(page)
    await page.get_by_role("link", name="Judges").click()
    await expect(page.locator("main h1")).to_have_text("Judges")
    name = f"Politeness {marker()} {XSS}"
    await page.get_by_role("button", name="New judge").click()
    form = page.get_by_role("form", name="New judge")
    await form.get_by_label("Name").fill(name)
    await expect(form.get_by_label("Model")).to_have_value("maestrale-echo")
    await form.get_by_label("Instructions").fill("Is the answer polite?")
    await form.get_by_role("button", name="Add option").click()
    options = form.locator(".option-row")
    await options.last.get_by_label("Option value").fill("neutral")
    await form.get_by_role("button", name="Create judge").click()
    await expect(page.locator("#judge-name")).to_have_text(name)
    await expect(page.get_by_role("button", name=name)).to_be_visible()
    await expect(page.locator("main")).to_contain_text("classification: good / bad / neutral")

    # Try it on the newest event (picked from the list): the builtin model's verdict.
    await page.get_by_role("button", name="Pick from the latest events").click()
    await page.get_by_role("button", name=f"Use event {event_id}").click()
    await expect(page.locator("#try-event-id")).to_have_value(event_id)
    await page.get_by_role("button", name="Run on this event").click()
    verdict = page.get_by_role("form", name="Try on an event").locator(".verdict")
    await expect(verdict.locator(".verdict-answer")).to_have_text("good")
    await expect(verdict.locator(".verdict-analysis")).to_have_text("echo")
    await shot(page, "judges")

    # A missing event: the API's message.
    await page.locator("#try-event-id").fill("no-such-event")
    await page.get_by_role("button", name="Run on this event").click()
    await expect(page.locator(".try-result .error")).to_contain_text("not found")

    # On typed messages, with the saved judge.
    typed = page.get_by_role("form", name="Try on messages")
    await typed.get_by_label("User message").fill("hello")
    await typed.get_by_label("Assistant answer").fill(XSS)
    await typed.get_by_role("button", name="Run on these messages").click()
    await expect(typed.locator(".verdict-answer")).to_have_text("good")

    # Edit: a regression judge now.
    await page.get_by_role("button", name="Edit", exact=True).click()
    edit = page.get_by_role("form", name="Edit judge")
    await edit.get_by_label("Output").select_option("REGRESSION")
    await edit.get_by_label("Maximum", exact=True).fill("10")
    await edit.get_by_role("button", name="Save judge").click()
    await expect(page.locator("main")).to_contain_text("regression: 0 to 10")

    # Delete, confirmed in the page.
    await page.get_by_role("button", name="Delete", exact=True).click()
    await page.get_by_role("button", name="Confirm").click()
    await expect(page.get_by_role("button", name=name)).to_have_count(0)
    await page.get_by_label("Search judges by name").fill(f"nothing-{marker()}")
    await page.get_by_role("button", name="Search", exact=True).click()
    await expect(page.get_by_text("No judge matches.")).to_be_visible()
    assert re.search(r"/console/judges", page.url)
