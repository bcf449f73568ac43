"""Browser fixtures of the console's tests: a live `maestrale serve`, Debian's Chromium driven by
Playwright (never `playwright install`), a signed-in page, and screenshots.

- `console_url`: the live server (one per test session, SQLite, in-process worker).
- `console_data_dir`: its data directory (`maestrale.db` in it).
- `browser`: Chromium (the tests skip, saying why, where /usr/bin/chromium or playwright lacks).
- `page`: a fresh context at 1280x800; `phone_page` at 390x844. Each records JavaScript
  dialogs (`page_dialogs(page)`) and fails the test on one (an `alert(1)` that ran), on an
  uncaught page error, or on a Content-Security-Policy violation.
- `signed_in(page, admin=False, api_key=API_KEY)`: signs in through the form.
- `shot(page, name)`: a full-page screenshot in tests/console/screenshots/ and in
  $MAESTRALE_CONSOLE_SHOTS when set.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.support.app_fixtures import ADMIN_KEY, API_KEY
from tests.support.live import start_server, stop_server

if TYPE_CHECKING:
    from playwright.async_api import Browser, Page, ViewportSize

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SHOTS = Path(__file__).parent / "screenshots"
DESKTOP: ViewportSize = {"width": 1280, "height": 800}
PHONE: ViewportSize = {"width": 390, "height": 844}
TIMEOUT_MS = 15_000


@pytest.fixture(scope="session")
def console_data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The live server's data directory (its SQLite database: `maestrale.db`), for tests that
    put rows straight into the store."""
    return tmp_path_factory.mktemp("console") / "data"


@pytest.fixture(scope="session")
def console_url(console_data_dir: Path) -> Iterator[str]:
    proc, url = start_server(console_data_dir)
    try:
        yield url
    finally:
        stop_server(proc)


@pytest.fixture(scope="session")
async def browser() -> AsyncIterator[Browser]:
    if not CHROMIUM.exists():
        pytest.skip(f"no Chromium at {CHROMIUM} (Debian's `chromium` package; .ci/run installs it)")
    async_api = pytest.importorskip("playwright.async_api", reason="playwright is not installed")
    async with async_api.async_playwright() as playwright:
        chromium = await playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True
        )
        try:
            yield chromium
        finally:
            await chromium.close()


_PROBLEMS: dict[int, dict[str, list[str]]] = {}


def page_dialogs(page: Page) -> list[str]:
    """The messages of the JavaScript dialogs (alert, confirm...) the page opened."""
    return _PROBLEMS[id(page)]["dialogs"]


async def _open_page(browser: Browser, url: str, viewport: ViewportSize) -> Page:
    context = await browser.new_context(base_url=url, viewport=viewport)
    context.set_default_timeout(TIMEOUT_MS)
    page = await context.new_page()
    problems: dict[str, list[str]] = {"dialogs": [], "errors": [], "csp": []}
    _PROBLEMS[id(page)] = problems

    async def on_dialog(dialog: Any) -> None:
        problems["dialogs"].append(dialog.message)
        await dialog.dismiss()

    def on_console(message: Any) -> None:
        if message.type == "error" and "Content Security Policy" in message.text:
            problems["csp"].append(message.text)

    page.on("dialog", on_dialog)
    page.on("pageerror", lambda error: problems["errors"].append(str(error)))
    page.on("console", on_console)
    return page


async def _close_page(page: Page) -> None:
    problems = _PROBLEMS.pop(id(page))
    await page.context.close()
    assert problems["dialogs"] == [], "a dialog opened: script from data ran"
    assert problems["csp"] == [], "Content-Security-Policy violations"
    assert problems["errors"] == [], "uncaught errors in the page"


@pytest.fixture
async def page(browser: Browser, console_url: str) -> AsyncIterator[Page]:
    opened = await _open_page(browser, console_url, DESKTOP)
    yield opened
    await _close_page(opened)


@pytest.fixture
async def phone_page(browser: Browser, console_url: str) -> AsyncIterator[Page]:
    opened = await _open_page(browser, console_url, PHONE)
    yield opened
    await _close_page(opened)


async def signed_in(page: Page, admin: bool = False, api_key: str = API_KEY) -> Page:
    """Signs in through the sign-in form; the page is then on the playground."""
    await page.goto("/console/sign-in")
    await page.get_by_label("API key").fill(api_key)
    if admin:
        await page.get_by_label("Admin key").fill(ADMIN_KEY)
    await page.get_by_role("button", name="Sign in").click()
    await page.wait_for_url("**/console/playground")
    await page.locator("main h1").wait_for()
    return page


async def shot(page: Page, name: str) -> Path:
    """Saves a full-page screenshot `<name>.png` and returns its path."""
    SHOTS.mkdir(exist_ok=True)
    path = SHOTS / f"{name}.png"
    await page.screenshot(path=str(path), full_page=True)
    extra = os.environ.get("MAESTRALE_CONSOLE_SHOTS")
    if extra:
        Path(extra).mkdir(parents=True, exist_ok=True)
        shutil.copy(path, Path(extra) / path.name)
    return path
