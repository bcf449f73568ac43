"""The trace view in a real browser: search the traces, open one, its waterfall nested by
parent, a span's attributes and GenAI messages, the trace's logs beside it; text holding markup
shows literally and nothing runs."""

from __future__ import annotations

import re
import secrets
import time
from pathlib import Path
from typing import Any

from playwright.async_api import Page, expect

from maestrale.core.db import Database
from maestrale.telemetry.tables import TelemetryLog, TelemetrySpan, TelemetryTrace
from tests.console.conftest import shot, signed_in
from tests.console.events import XSS, marker
from tests.support.app_fixtures import default_tenant

MS = 1_000_000


async def insert_trace(data_dir: Path, service: str) -> tuple[str, dict[str, str]]:
    """A trace of four spans (root > chat > tool, root > db; the tool failed) and a log of the
    tool span, straight into the live server's store; its id and the span ids by name."""
    trace_id = secrets.token_hex(16)
    ids = {n: secrets.token_hex(8) for n in ("root", "chat", "tool", "db")}
    t0 = time.time_ns() - 1000 * MS
    db = Database(f"sqlite+aiosqlite:///{(data_dir / 'maestrale.db').resolve()}")
    try:
        tenant = await default_tenant(db)
        owner = {"organization_id": tenant.organization_id, "workspace_id": tenant.workspace_id}

        def span(
            key: str, parent: str, name: str, ms: tuple[int, int], **more: Any
        ) -> TelemetrySpan:
            start, end = ms
            fields: dict[str, Any] = {"kind": "SPAN_KIND_INTERNAL", **more}
            return TelemetrySpan(
                **owner,
                trace_id=trace_id,
                span_id=ids[key],
                parent_span_id=ids[parent] if parent else "",
                start_ns=t0 + start * MS,
                end_ns=t0 + end * MS,
                duration_ns=(end - start) * MS,
                name=name,
                service_name=service,
                resource_attributes={"service.name": service, "host.name": "shop-1"},
                **fields,
            )

        messages = [{"role": "user", "parts": [{"type": "text", "content": f"hello {XSS}"}]}]
        answer = [{"role": "assistant", "parts": [{"type": "text", "content": "echo: hello"}]}]
        rows = [
            span("root", "", "POST /checkout", (0, 100), kind="SPAN_KIND_SERVER"),
            span(
                "chat",
                "root",
                "chat maestrale-echo",
                (10, 60),
                operation_name="chat",
                request_model="maestrale-echo",
                usage_input_tokens=12,
                usage_output_tokens=5,
                attributes={
                    "gen_ai.operation.name": "chat",
                    "gen_ai.request.model": "maestrale-echo",
                    "gen_ai.input.messages": messages,
                    "gen_ai.output.messages": answer,
                    "app.note": f"note {XSS}",
                },
            ),
            span(
                "tool",
                "chat",
                "execute_tool lookup",
                (20, 40),
                status_code="Error",
                status_message="lookup timed out",
                tool_name="lookup",
            ),
            span("db", "root", "SELECT orders", (70, 90)),
        ]
        summary = TelemetryTrace(
            **owner,
            trace_id=trace_id,
            start_ns=t0,
            end_ns=t0 + 100 * MS,
            duration_ns=100 * MS,
            root_span_id=ids["root"],
            root_span_name="POST /checkout",
            service_name=service,
            status_code="Error",
            error_count=1,
            span_count=4,
            input_tokens=12,
            output_tokens=5,
            models_used=["maestrale-echo"],
            tools_used=["lookup"],
        )
        log = TelemetryLog(
            **owner,
            timestamp_ns=t0 + 30 * MS,
            trace_id=trace_id,
            span_id=ids["tool"],
            severity_text="ERROR",
            severity_number=17,
            service_name=service,
            body=f"lookup failed {XSS}",
        )
        async with db.transaction() as work:
            work.session.add_all([*rows, summary, log])
    finally:
        await db.dispose()
    return trace_id, ids


async def test_search_open_a_trace_walk_its_waterfall_and_read_a_span_and_its_logs(
    page: Page, console_url: str, console_data_dir: Path
) -> None:
    service = f"shop-{marker()}"
    trace_id, ids = await insert_trace(console_data_dir, service)
    await signed_in(page)
    await page.get_by_role("link", name="Traces").click()
    await expect(page.locator("main h1")).to_have_text("Traces")

    await page.get_by_label("Search expression").fill(f"service_name = '{service}'")
    await page.get_by_role("button", name="Search", exact=True).click()
    rows = page.locator("main table tbody tr")
    await expect(rows).to_have_count(1)
    await expect(rows.first).to_contain_text("POST /checkout")
    await expect(rows.first).to_contain_text("Error (1)")
    await expect(rows.first.locator("td").nth(5)).to_have_text("17")  # tokens, in + out
    await shot(page, "traces")

    await rows.first.get_by_role("link", name="POST /checkout").click()
    await page.wait_for_url(f"**/console/traces/{trace_id}*")
    await expect(page.locator("main h1")).to_have_text("Trace")
    items = page.get_by_role("treeitem")
    await expect(items).to_have_count(4)
    # Nested by parent, siblings by start: root > chat > tool, root > db.
    order = [ids[k] for k in ("root", "chat", "tool", "db")]
    assert [await items.nth(i).get_attribute("data-span-id") for i in range(4)] == order
    levels = [await items.nth(i).get_attribute("aria-level") for i in range(4)]
    assert levels == ["1", "2", "3", "2"]
    await expect(items.nth(2)).to_contain_text("Error")  # the status in words, not colour only
    await expect(items.nth(2).locator(".wf-bar")).to_have_class(re.compile("wf-error"))
    # Bars placed relative to the trace: SELECT orders ran from 70 to 90 ms of 100.
    bar = items.nth(3).locator(".wf-bar")
    left, width = await bar.evaluate("b => [parseFloat(b.style.left), parseFloat(b.style.width)]")
    assert abs(left - 70) < 0.01 and abs(width - 20) < 0.01
    await expect(items.nth(0)).to_have_attribute("aria-selected", "true")

    # The keyboard walks the tree: down to the chat span, its GenAI fields and messages.
    await items.nth(0).focus()
    await page.keyboard.press("ArrowDown")
    await expect(items.nth(1)).to_have_attribute("aria-selected", "true")
    await expect(items.nth(1)).to_be_focused()
    detail = page.locator(".span-detail")
    await expect(detail.get_by_role("heading", name="chat maestrale-echo")).to_be_visible()
    await expect(detail).to_contain_text(f"hello {XSS}")
    await expect(detail).to_contain_text(f"note {XSS}")  # a span attribute, as text
    await expect(detail).to_contain_text("host.name")  # a resource attribute
    await expect(detail).to_contain_text("17 (12 in, 5 out)")
    await shot(page, "trace")

    # Right: its child, the failed tool call; its log is marked in the trace's logs.
    await page.keyboard.press("ArrowRight")
    await expect(detail).to_contain_text("lookup timed out")
    logs = page.locator(".trace-logs")
    await expect(logs.locator(".log.current")).to_contain_text(f"lookup failed {XSS}")

    # A click selects too; the log is no longer this span's.
    await items.nth(3).click()
    await expect(detail.get_by_role("heading", name="SELECT orders")).to_be_visible()
    await expect(logs.locator(".log.current")).to_have_count(0)
    await expect(logs.locator(".log")).to_have_count(1)
    assert await page.locator("main img, main script").count() == 0

    # A span whose parent never arrived is a root; a cycle of parents does not loop.
    tree = await page.evaluate(
        """async () => {
          const wf = await import('/console/static/js/waterfall.js');
          const s = (id, parent, us) => ({span_id: id, parent_span_id: parent, span_name: id,
            duration_ns: 1, start_time: `2026-01-01T00:00:00.${String(us).padStart(6, '0')}Z`});
          const rows = wf.spanTree([s('b', 'a', 2), s('a', 'b', 1), s('c', 'gone', 0)]);
          return rows.map((r) => [r.span.span_id, r.depth, r.orphan]);
        }"""
    )
    assert tree == [["c", 0, True], ["a", 0, False], ["b", 1, False]]
