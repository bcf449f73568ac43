"""The admin users page in a real browser: invitations (sent, refused addresses reported,
withdrawn), a member added, their role changed; names show literally."""

from __future__ import annotations

from playwright.async_api import Page, expect

from tests.console.conftest import shot, signed_in
from tests.console.events import XSS, marker


async def test_invite_withdraw_add_a_member_and_change_their_role(page: Page) -> None:
    await signed_in(page, admin=True)
    await page.get_by_role("link", name="Users").click()
    await expect(page.locator("main h1")).to_have_text("Users and invitations")
    invited = f"{marker()}@example.com"
    invite = page.get_by_role("form", name="Invite")
    await invite.get_by_label("E-mails (comma or newline separated)").fill(f"{invited}, nope")
    await invite.get_by_role("button", name="Send invitations").click()
    await expect(invite).to_contain_text("1 invited.")
    await expect(invite).to_contain_text("Invalid e-mails: nope")
    withdraw = page.get_by_role("button", name=f"Withdraw the invitation of {invited}")
    await expect(withdraw).to_be_visible()
    await withdraw.click()
    await expect(withdraw).to_have_count(0)

    email = f"{marker()}@example.com"
    add = page.get_by_role("form", name="Add a member")
    await add.get_by_label("E-mail").fill(email)
    await add.get_by_label("First name").fill(f"Grace {XSS}")
    await add.get_by_label("Last name").fill("Hopper")
    await add.get_by_role("button", name="Add member").click()
    row = page.locator("tbody tr", has_text=email)
    await expect(row).to_contain_text(f"Grace {XSS} Hopper")
    await page.get_by_label(f"Role of {email}").select_option("billing_manager")
    await expect(page.get_by_text(f"{email} is now billing_manager.")).to_be_visible()
    await page.reload()
    await expect(page.get_by_label(f"Role of {email}")).to_have_value("billing_manager")
    assert await page.locator("main img, main script").count() == 0
    await shot(page, "admin-users")

    await page.get_by_role("button", name=f"Remove {email}").click()
    await page.get_by_role("button", name="Confirm").click()
    await expect(page.locator("tbody tr", has_text=email)).to_have_count(0)
