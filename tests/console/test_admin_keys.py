"""The admin keys page in a real browser: a key created for a member is shown once (and works),
the list shows it masked, revoking it (confirmed in the page) stops it at once."""

from __future__ import annotations

import re

import httpx
from playwright.async_api import Page, expect

from tests.console.conftest import shot, signed_in
from tests.console.events import XSS, marker


async def test_create_a_key_shown_once_then_revoke_it(page: Page, console_url: str) -> None:
    await signed_in(page, admin=True)
    await page.get_by_role("link", name="Keys").click()
    await expect(page.locator("main h1")).to_have_text("API keys")
    name = f"ci {marker()} {XSS}"
    form = page.get_by_role("form", name="Create a key")
    await expect(form.get_by_label("Workspace")).to_have_value(re.compile(".+"))
    await form.get_by_label("Name").fill(name)
    await form.get_by_role("button", name="Create key").click()
    shown = page.locator("#new-key-value")
    await expect(shown).to_have_value(re.compile(r"^msk_"))
    key = await shown.input_value()
    await expect(page.get_by_text("Copy it now: it is shown only this once.")).to_be_visible()
    row = page.locator("tbody tr", has_text=name)
    await expect(row).to_have_count(1)
    await expect(row).not_to_contain_text(key)  # masked in the list
    await shot(page, "admin-keys")
    async with httpx.AsyncClient(base_url=console_url) as http:
        auth = {"Authorization": f"Bearer {key}"}
        assert (await http.get("/v1/models", headers=auth)).status_code == 200
        await page.get_by_role("button", name="I have saved it").click()
        await expect(shown).to_have_count(0)
        await page.reload()
        await expect(page.locator("tbody tr", has_text=name)).to_have_count(1)
        assert await page.locator("main").inner_text() and key not in await page.content()

        await page.get_by_role("button", name=f"Revoke key {name}").click()
        await page.get_by_role("button", name="Confirm").click()
        await expect(page.locator("tbody tr", has_text=name)).to_have_count(0)
        assert (await http.get("/v1/models", headers=auth)).status_code == 401
