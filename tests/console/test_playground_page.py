"""The playground in a real browser: a streamed answer, tool calls, Stop, "view as code", the
XSS cases, and the phone-sized layout."""

from __future__ import annotations

import asyncio
import uuid

import httpx
from playwright.async_api import Page, Route, expect

from tests.console.conftest import shot, signed_in
from tests.support.app_fixtures import API_KEY

XSS = "<script>alert(1)</script> <img src=x onerror=alert(1)>"


async def on_echo(page: Page) -> Page:
    """Signed in, on the echo test double (its answers are known; the page starts on the
    catalog's best real chat model)."""
    await signed_in(page)
    await page.get_by_label("Model or agent").select_option("model:maestrale-echo")
    return page


async def send(page: Page, text: str) -> None:
    await page.get_by_label("Message", exact=True).fill(text)
    await page.get_by_role("button", name="Send", exact=True).click()


async def test_a_streamed_answer_shows_message_text_literally(page: Page) -> None:
    await page.goto("/console/sign-in")
    await shot(page, "sign-in")
    await signed_in(page)
    # The catalog's best real chat model first, not the echo test double; the echo is chosen
    # here for its deterministic answer.
    target = page.get_by_label("Model or agent")
    await expect(target).to_have_value("model:smollm2-135m-instruct")
    await target.select_option("model:maestrale-echo")
    await send(page, XSS)
    answer = page.locator(".message.assistant .content").last
    await expect(answer).to_have_text(f"echo: {XSS}")
    await expect(page.locator(".message.user .content").last).to_have_text(XSS)
    # Shown as text: no element came out of the message.
    assert await page.locator(".chat img, .chat script").count() == 0
    await expect(page.locator(".stats")).to_contain_text("finish: stop")
    await expect(page.locator(".stats")).to_contain_text("tokens:")
    await shot(page, "playground")


async def test_send_waits_for_the_list_of_models(page: Page) -> None:
    # A message sent while the list loads would go without a model (a 422 in the chat).
    listed = asyncio.Event()

    async def slow_models(route: Route) -> None:
        await listed.wait()
        await route.continue_()

    await page.route("**/v1/models", slow_models)
    await signed_in(page)
    await page.get_by_label("Message", exact=True).fill("early")
    send_button = page.get_by_role("button", name="Send", exact=True)
    await expect(send_button).to_be_disabled()
    listed.set()
    await expect(send_button).to_be_enabled()
    await page.get_by_label("Model or agent").select_option("model:maestrale-echo")
    await send_button.click()
    await expect(page.locator(".message.assistant .content").last).to_have_text("echo: early")


async def test_tool_calls_are_shown_and_answered(page: Page) -> None:
    await on_echo(page)
    await page.get_by_role("button", name="Insert an example tool").click()
    await send(page, '/call get_weather {"city": "Paris"}')
    await expect(page.locator(".tool-call").last).to_have_text('→ get_weather({"city": "Paris"})')
    await expect(page.locator(".stats")).to_contain_text("finish: tool_calls")
    await page.get_by_label("Result of get_weather").fill("sunny")
    await page.get_by_role("button", name="Send result").click()
    await expect(page.locator(".message.assistant .content").last).to_have_text(
        "tool get_weather returned: sunny"
    )
    await shot(page, "playground-tools")


async def test_stop_cancels_the_request(page: Page) -> None:
    await on_echo(page)
    await send(page, "/sleep 20000\nlate")
    stop = page.get_by_role("button", name="Stop")
    await expect(stop).to_be_enabled()
    await stop.click()
    await expect(page.locator(".stats")).to_contain_text("finish: stopped")
    await expect(page.get_by_role("button", name="Send", exact=True)).to_be_enabled()
    await expect(stop).to_be_disabled()
    # The page goes on working after a stop.
    await send(page, "again")
    await expect(page.locator(".message.assistant .content").last).to_have_text("echo: again")


async def test_view_as_code_shows_the_same_call_without_the_key(page: Page) -> None:
    await signed_in(page)
    await page.get_by_label("System prompt").fill("Be brief.")
    await page.get_by_label("Temperature").fill("0.3")
    await page.get_by_label("Message", exact=True).fill("hello there")
    await page.get_by_role("button", name="View as code").click()
    code = page.locator("pre.code")
    await expect(code).to_contain_text("client.chat.stream(")
    await expect(code).to_contain_text('os.environ["MAESTRALE_API_KEY"]')
    await expect(code).to_contain_text('"content": "Be brief."')
    await expect(code).to_contain_text("temperature=0.3")
    await page.get_by_role("tab", name="curl").click()
    await expect(code).to_contain_text("/v1/chat/completions")
    await expect(code).to_contain_text('"temperature": 0.3')
    await expect(code).to_contain_text("Authorization: Bearer $MAESTRALE_API_KEY")
    assert API_KEY not in await page.content()
    await page.get_by_role("button", name="Copy").click()
    await expect(page.get_by_role("status").filter(has_text="Copied")).to_be_visible()
    await shot(page, "playground-code")


async def test_the_playground_on_a_phone(phone_page: Page) -> None:
    page = await on_echo(phone_page)
    await send(page, "small screen")
    await expect(page.locator(".message.assistant .content").last).to_have_text(
        "echo: small screen"
    )
    width = await page.evaluate("document.documentElement.scrollWidth")
    assert width <= 390, "the page scrolls sideways on a phone"
    # The navigation folds into a menu button, which opens it with the keyboard.
    menu = page.get_by_role("button", name="Menu")
    await menu.focus()
    await page.keyboard.press("Enter")
    await expect(page.get_by_role("link", name="Files")).to_be_visible()
    await shot(page, "playground-phone")


async def test_an_agent_answers_and_its_code_names_it(page: Page, console_url: str) -> None:
    headers = {"Authorization": f"Bearer {API_KEY}"}
    name = f"helper-{uuid.uuid4().hex[:6]}"
    async with httpx.AsyncClient(base_url=console_url, headers=headers) as client:
        created = await client.post("/v1/agents", json={"model": "maestrale-echo", "name": name})
        assert created.status_code in (200, 201), created.text
        agent_id = created.json()["id"]
    await signed_in(page)
    await page.get_by_label("Model or agent").select_option(f"agent:{agent_id}")
    await send(page, "hi agent")
    await expect(page.locator(".message.assistant .content").last).to_have_text("echo: hi agent")
    await page.get_by_role("button", name="View as code").click()
    code = page.locator("pre.code")
    await expect(code).to_contain_text("client.agents.stream(")
    await expect(code).to_contain_text(f'agent_id="{agent_id}"')
    await page.get_by_role("tab", name="curl").click()
    await expect(code).to_contain_text("/v1/agents/completions")


async def test_an_engine_failure_shows_the_api_s_error(page: Page) -> None:
    await on_echo(page)
    await send(page, "/fail 503")
    error = page.locator(".message.assistant .error")
    await expect(error).to_contain_text("builtin engine failure requested: 503")
    await expect(error).to_contain_text("HTTP 5")
    await expect(page.locator(".stats")).to_contain_text("finish: error")
    # A bad parameter is caught before the call.
    await page.get_by_label("Tools (JSON)").fill("{not json")
    await send(page, "hello")
    await expect(page.locator(".chat .error").last).to_contain_text("Tools is not valid JSON")
    await expect(page.get_by_label("Message", exact=True)).to_have_value("hello")
