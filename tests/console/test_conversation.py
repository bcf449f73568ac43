"""The conversation view in a real browser: every entry type (messages, a function call and its
result, a tool execution, a handoff), restart from an entry, continue; text from the entries
shows literally."""

from __future__ import annotations

import json
import re

from playwright.async_api import Page, expect

from tests.console.conftest import shot, signed_in
from tests.console.events import XSS, client

WEATHER = {
    "type": "function",
    "function": {"name": "get_weather", "parameters": {"type": "object"}},
}


async def conversation_with_every_entry_type(url: str) -> str:
    async with client(url) as api:
        target = (
            await api.post("/v1/agents", json={"model": "maestrale-echo", "name": "Target"})
        ).json()
        source = await api.post(
            "/v1/agents",
            json={
                "model": "maestrale-echo",
                "name": "Source",
                "handoffs": [target["id"]],
                "tools": [WEATHER, {"type": "code_interpreter"}],
            },
        )
        agent_id = source.json()["id"]
        started = await api.post(
            "/v1/conversations", json={"agent_id": agent_id, "inputs": f"weather {XSS}"}
        )
        conv = started.json()["conversation_id"]
        url_ = f"/v1/conversations/{conv}"

        async def append(inputs: object) -> list[dict[str, object]]:
            resp = await api.post(url_, json={"inputs": inputs})
            assert resp.status_code == 200, resp.text
            outputs: list[dict[str, object]] = resp.json()["outputs"]
            return outputs

        (call,) = await append('/call get_weather {"city": "<b>Genova</b>"}')
        assert call["type"] == "function.call"
        result = {"type": "function.result", "tool_call_id": call["tool_call_id"]}
        await append([{**result, "result": f"sunny {XSS}"}])
        code = json.dumps({"code": "print('<b>bold</b>')"})
        outputs = await append(f"/call code_interpreter {code}")
        assert outputs[0]["type"] == "tool.execution", outputs
        outputs = await append(f"/call handoff_to_{target['id']} {{}}")
        assert outputs[0]["type"] == "agent.handoff", outputs
        return str(conv)


async def test_every_entry_type_restart_and_continue(page: Page, console_url: str) -> None:
    conv = await conversation_with_every_entry_type(console_url)
    await signed_in(page)
    await page.goto(f"/console/conversations/{conv}")
    await expect(page.locator("main h1")).to_have_text("Conversation")
    for kind in ("message.input", "message.output", "function.call", "function.result"):
        await expect(page.locator(f"[data-entry-type='{kind}']").first).to_be_visible()
    first = page.locator("[data-entry-type='message.input']").first
    await expect(first).to_contain_text(f"weather {XSS}")
    call = page.locator("[data-entry-type='function.call']")
    await expect(call).to_contain_text("get_weather")
    await expect(call).to_contain_text('"city": "<b>Genova</b>"')
    await expect(page.locator("[data-entry-type='function.result']")).to_contain_text(
        f"sunny {XSS}"
    )
    tool = page.locator("[data-entry-type='tool.execution']")
    await expect(tool).to_contain_text("code_interpreter")
    await expect(tool).to_contain_text("<b>bold</b>")
    handoff = page.locator("[data-entry-type='agent.handoff']")
    await expect(handoff).to_contain_text("From Source to Target")
    assert await page.locator("main img, main script, main b").count() == 0
    # The agent answering it now (the handoff's target), by name.
    await expect(page.get_by_role("link", name=re.compile(r"^Target \(ag_"))).to_be_visible()
    await shot(page, "conversation")

    # Restart from the first entry: a new conversation, opened.
    await first.get_by_role("button", name=re.compile("^Restart from entry msg_")).click()
    await page.get_by_label("New message after this entry").fill("again")
    await page.get_by_role("button", name="Restart", exact=True).click()
    await page.wait_for_url(lambda url: conv not in url)
    entries = page.locator("article.entry")
    await expect(entries).to_have_count(3)  # the first entry, "again", the answer
    await expect(entries.nth(1)).to_contain_text("again")
    await expect(entries.nth(2)).to_contain_text("echo: again")

    # Continue it.
    await page.get_by_label("Message", exact=True).fill("more")
    await page.get_by_role("button", name="Send", exact=True).click()
    await expect(entries.last).to_contain_text("echo: more")

    # Delete it (confirmed in the page), back to the agents page.
    await page.get_by_role("button", name="Delete conversation").click()
    await page.get_by_role("button", name="Confirm").click()
    await page.wait_for_url("**/console/agents")


async def test_a_pending_function_call_is_answered_from_the_page(
    page: Page, console_url: str
) -> None:
    async with client(console_url) as api:
        started = await api.post(
            "/v1/conversations",
            json={
                "model": "maestrale-echo",
                "tools": [WEATHER],
                "inputs": '/call get_weather {"city": "Nice"}',
            },
        )
        conv = started.json()["conversation_id"]
    await signed_in(page)
    await page.goto(f"/console/conversations/{conv}")
    form = page.get_by_role("form", name="Send a function result")
    await expect(form).to_contain_text("The model called get_weather")
    await form.get_by_label("Result").fill(f"sunny {XSS}")
    await form.get_by_role("button", name="Send result").click()
    answer = page.locator("[data-entry-type='message.output']").last
    await expect(answer).to_contain_text(f"tool get_weather returned: sunny {XSS}")
    await expect(page.get_by_role("form", name="Continue the conversation")).to_be_visible()
    await expect(page.locator("main")).to_contain_text("Model maestrale-echo")
