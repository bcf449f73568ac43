"""The admin workspaces page in a real browser: a workspace created, a member added to it with a
role, a group created with a member and a workspace assignment, the workspace archived."""

from __future__ import annotations

from playwright.async_api import Page, expect

from tests.console.conftest import shot, signed_in
from tests.console.events import XSS, marker


async def test_workspaces_members_and_groups(page: Page) -> None:
    await signed_in(page, admin=True)
    await page.get_by_role("link", name="Workspaces").click()
    await expect(page.locator("main h1")).to_have_text("Workspaces and groups")
    name = f"Research {marker()} {XSS}"
    form = page.get_by_role("form", name="New workspace")
    await form.get_by_label("Name").fill(name)
    await form.get_by_role("button", name="Create workspace").click()
    await expect(page.get_by_role("heading", name=name)).to_be_visible()
    await expect(page.locator("#workspace-detail")).to_contain_text("Members (1)")  # its admin
    await expect(page.get_by_role("button", name=name, exact=True)).to_be_visible()  # listed

    group = f"Team {marker()} {XSS}"
    new_group = page.get_by_role("form", name="New group")
    await new_group.get_by_label("Name").fill(group)
    await new_group.get_by_role("button", name="Create group").click()
    await expect(page.get_by_role("heading", name=f"Group {group}")).to_be_visible()
    detail = page.locator("#group-detail")
    await detail.get_by_role("form", name="Add to group").get_by_role("button").click()
    await expect(detail.get_by_role("heading", name="Members (1)")).to_be_visible()
    assign = detail.get_by_role("form", name="Assign to a workspace")
    listed = page.get_by_role("button", name=name, exact=True)
    await assign.get_by_label("Workspace").select_option(
        await listed.get_attribute("data-workspace-id")
    )
    await assign.get_by_label("Role").select_option("dev")
    await assign.get_by_role("button", name="Assign").click()
    await expect(detail.get_by_role("heading", name="Workspaces (1)")).to_be_visible()
    await expect(detail.locator("tbody tr", has_text=name)).to_contain_text("dev")
    assert await page.locator("main img, main script").count() == 0
    await shot(page, "admin-workspaces")

    await page.get_by_role("button", name="Delete group").click()
    await page.get_by_role("button", name="Confirm").click()
    await expect(page.get_by_role("button", name=group, exact=True)).to_have_count(0)
    await page.get_by_role("button", name=name, exact=True).click()
    await page.get_by_role("button", name="Archive").click()
    await page.get_by_role("button", name="Confirm").click()
    await expect(page.get_by_role("button", name=name, exact=True)).to_have_count(0)
    await page.get_by_label("Show archived workspaces").check()
    await expect(page.get_by_role("button", name=name, exact=True)).to_be_visible()
