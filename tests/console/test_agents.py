"""The agents page in a real browser: create, edit (a new version), versions, aliases, start a
conversation with the agent; names and instructions holding markup show literally."""

from __future__ import annotations

import re

from playwright.async_api import Page, expect

from tests.console.conftest import shot, signed_in
from tests.console.events import XSS, marker


async def test_create_edit_versions_aliases_and_talk_to_an_agent(page: Page) -> None:
    await signed_in(page)
    await page.get_by_role("link", name="Agents").click()
    await expect(page.locator("main h1")).to_have_text("Agents")
    name = f"Helper {marker()} {XSS}"
    await page.get_by_role("button", name="New agent").click()
    form = page.get_by_role("form", name="New agent")
    await expect(form.get_by_label("Model")).to_have_value("maestrale-echo")
    await form.get_by_label("Name").fill(name)
    await form.get_by_label("Instructions").fill(f"Be brief {XSS}")
    await form.get_by_role("button", name="Create agent").click()
    await expect(page.locator("#agent-name")).to_have_text(name)
    await expect(page.locator(".agent-detail")).to_contain_text(f"Be brief {XSS}")
    await expect(page.get_by_role("button", name=name)).to_be_visible()  # in the list

    # Each save is a new version, made current.
    await page.get_by_role("button", name="Edit").click()
    form = page.get_by_role("form", name="Edit agent")
    await form.get_by_label("Instructions").fill("Be very brief")
    await form.get_by_label("Version message").fill("shorter")
    await form.get_by_role("button", name="Save as new version").click()
    await expect(page.get_by_text("2 (current)")).to_be_visible()
    await expect(page.locator(".agent-detail")).to_contain_text("Be very brief")
    await page.get_by_role("button", name="View version 1").click()
    await expect(page.get_by_role("heading", name="Version 1")).to_be_visible()
    await page.get_by_role("button", name="Make version 1 current").click()
    await expect(page.get_by_text("1 (current)")).to_be_visible()

    # Aliases: set, then delete.
    await page.get_by_role("textbox", name="Alias").fill("prod")
    aliases = page.get_by_role("form", name="Set an alias")
    await aliases.get_by_label("Version").select_option("2")
    await page.get_by_role("button", name="Set alias").click()
    row = page.locator("tr", has=page.get_by_role("button", name="Delete alias prod"))
    await expect(row).to_contain_text("2")
    await shot(page, "agents")
    await page.get_by_role("button", name="Delete alias prod").click()
    await expect(page.get_by_text("No aliases yet.")).to_be_visible()

    # A conversation with the agent opens the conversation view.
    talk = page.get_by_role("form", name="Start a conversation")
    await talk.get_by_label("Message").fill(f"hi {XSS}")
    await page.get_by_role("button", name="Start conversation").click()
    await page.wait_for_url(re.compile(r"/console/conversations/conv_"))
    answer = page.locator("[data-entry-type='message.output']")
    await expect(answer).to_contain_text(f"echo: hi {XSS}")
    assert await page.locator("main img, main script").count() == 0
    await expect(page.get_by_role("link", name=re.compile("Helper"))).to_be_visible()

    # Back on the agents page: the conversation is listed; the empty search state.
    await page.get_by_role("link", name="Agents").first.click()
    await expect(page.get_by_role("heading", name="Recent conversations")).to_be_visible()
    await page.get_by_label("Search agents").fill(f"nothing-{marker()}")
    await page.get_by_role("button", name="Search", exact=True).click()
    await expect(page.get_by_text("No agent matches this search.")).to_be_visible()

    # Delete it, confirmed in the page (no browser dialog).
    await page.get_by_label("Search agents").fill("")
    await page.get_by_role("button", name="Search", exact=True).click()
    await page.get_by_role("button", name=name).click()
    await expect(page.locator("#agent-name")).to_have_text(name)
    await page.get_by_role("button", name="Delete", exact=True).click()
    await page.get_by_role("button", name="Cancel").click()
    await expect(page.locator("#agent-name")).to_have_text(name)
    await page.get_by_role("button", name="Delete", exact=True).click()
    await page.get_by_role("button", name="Confirm").click()
    await expect(page.get_by_text("Agent deleted.")).to_be_visible()
    await expect(page.get_by_role("button", name=name)).to_have_count(0)
