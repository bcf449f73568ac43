"""Signing in and out in a real browser: refused keys, the keyboard, the admin links, and the
way back to sign-in (with its message) when the session or the key ends."""

from __future__ import annotations

import re

import httpx
from playwright.async_api import Page, expect

from tests.console.conftest import shot, signed_in
from tests.support.app_fixtures import ADMIN_KEY, API_KEY

SIGN_IN = re.compile(r"/console/sign-in$")
EXPIRED = "Your session ended (key expired or revoked): sign in again."


async def test_a_refused_key_then_sign_in_with_the_keyboard_and_sign_out(page: Page) -> None:
    await page.goto("/console/playground")
    await expect(page).to_have_url(SIGN_IN)  # no session: sign in first
    await page.get_by_label("API key").fill("msk_not_a_key")
    await page.get_by_role("button", name="Sign in").click()
    await expect(page.get_by_role("alert")).to_have_text(
        "This API key is not valid: unknown, expired or revoked."
    )
    await shot(page, "sign-in-refused")
    # The keyboard alone: the key field has the focus, Enter sends the form.
    await expect(page.get_by_label("API key")).to_be_focused()
    await page.keyboard.type(API_KEY)
    await page.keyboard.press("Enter")
    await page.wait_for_url("**/console/playground")
    assert API_KEY not in page.url
    storage = await page.evaluate("JSON.stringify([localStorage, sessionStorage, document.cookie])")
    assert API_KEY not in storage
    assert "maestrale_console" not in storage  # HttpOnly: scripts cannot read the cookie
    # No admin key, no admin links.
    await expect(page.get_by_role("link", name="Playground")).to_be_visible()
    await expect(page.get_by_role("link", name="Keys")).to_have_count(0)
    await page.get_by_role("button", name="Sign out").click()
    await page.wait_for_url("**/console/sign-in?signed_out=1")
    await expect(page.get_by_role("status")).to_have_text("You are signed out.")
    await page.goto("/console/files")
    await expect(page).to_have_url(SIGN_IN)


async def test_an_admin_key_adds_the_admin_links(page: Page) -> None:
    await signed_in(page, admin=True)
    for name in ("Keys", "Users", "Workspaces", "Limits", "Usage"):
        await expect(page.get_by_role("link", name=name, exact=True)).to_be_visible()


async def test_a_revoked_key_sends_the_page_back_to_sign_in(page: Page, console_url: str) -> None:
    headers = {"x-api-key": ADMIN_KEY}
    async with httpx.AsyncClient(base_url=console_url, headers=headers) as admin:
        users = (await admin.get("/v1/admin/users")).json()["members"]
        owner = next(u["uuid"] for u in users if u["email"] == "owner@localhost")
        spaces = (await admin.get("/v1/admin/workspaces")).json()["items"]
        space = next(w["uuid"] for w in spaces if w["is_default"])
        created = (
            await admin.post("/v1/admin/api-keys", json={"user_id": owner, "workspace_uuid": space})
        ).json()
        await signed_in(page, api_key=created["key"])
        # The playground's first requests (the models) land before the key is revoked: the
        # message sent below is what meets the revoked key.
        await page.wait_for_load_state("networkidle")
        revoked = await admin.delete(f"/v1/admin/api-keys/{created['key_id']}")
        assert revoked.status_code in (200, 204)
    await page.get_by_label("Message", exact=True).fill("still there?")
    await page.get_by_role("button", name="Send", exact=True).click()
    await page.wait_for_url("**/console/sign-in?expired=1")
    await expect(page.get_by_role("alert")).to_have_text(EXPIRED)
    await shot(page, "sign-in-expired")


async def test_an_ended_session_sends_the_page_back_to_sign_in(page: Page) -> None:
    await signed_in(page)
    await page.context.clear_cookies()  # as when the session expires: the cookie opens nothing
    await page.get_by_label("Message", exact=True).fill("hello")
    await page.get_by_role("button", name="Send", exact=True).click()
    await page.wait_for_url("**/console/sign-in?expired=1")
    await expect(page.get_by_role("alert")).to_have_text(EXPIRED)
    await page.goto("/console/files")  # and a page load with no session goes there too
    await expect(page).to_have_url(SIGN_IN)
