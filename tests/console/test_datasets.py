"""The datasets page in a real browser: create a dataset, add a record, import events by id and
a JSONL file (uploaded, then followed to its end), export to JSONL, view and delete records;
text from records shows literally."""

from __future__ import annotations

import json

import httpx
from playwright.async_api import FilePayload, Page, expect

from tests.console.conftest import shot, signed_in
from tests.console.events import XSS, make_events, marker


async def test_records_imports_and_export(page: Page, console_url: str) -> None:
    ids = await make_events(console_url, marker(), [f"first {XSS}", "second"])
    await signed_in(page)
    await page.get_by_role("link", name="Datasets").click()
    await expect(page.locator("main h1")).to_have_text("Datasets")
    name = f"Golden {marker()} {XSS}"
    await page.get_by_role("button", name="New dataset").click()
    form = page.get_by_role("form", name="New dataset")
    await form.get_by_label("Name").fill(name)
    await form.get_by_role("button", name="Create dataset").click()
    await expect(page.locator("#dataset-name")).to_have_text(name)
    await expect(page.get_by_text("No records yet: add one or import some.")).to_be_visible()
    records = page.locator("table.records tbody tr")

    add = page.get_by_role("form", name="Add a record")
    await add.get_by_label("User message").fill(f"question {XSS}")
    await add.get_by_label("Assistant answer").fill("answer")
    await add.get_by_label("Properties (JSON object)").fill('{"label": "good"}')
    await add.get_by_role("button", name="Add record").click()
    await expect(records).to_have_count(1)
    await expect(records.first).to_contain_text(f"question {XSS}")
    await expect(records.first).to_contain_text("label=good")

    # Import two events by id, then a JSONL file: each task followed to its end.
    by_id = page.get_by_role("form", name="Import by id")
    await by_id.get_by_label("Ids (comma or newline separated)").fill("\n".join(ids))
    await by_id.get_by_role("button", name="Import").click()
    await expect(page.locator("#import-status")).to_contain_text("COMPLETED", timeout=60_000)
    await expect(records).to_have_count(3)
    message = {"role": "user", "content": "from file"}
    line = json.dumps({"payload": {"messages": [message]}, "properties": {}}) + "\n"
    jsonl = FilePayload(name="more.jsonl", mimeType="application/jsonl", buffer=line.encode())
    file_form = page.get_by_role("form", name="Import a JSONL file")
    await file_form.get_by_label("File").set_input_files(files=[jsonl])
    await file_form.get_by_role("button", name="Upload and import").click()
    await expect(records).to_have_count(4, timeout=60_000)
    await expect(page.locator("table.records")).to_contain_text("from file")
    tasks = page.locator("tr", has_text="COMPLETED")
    await expect(tasks).to_have_count(2)

    # Export: a JSONL file of the Files API, one line a record.
    await page.get_by_role("button", name="Export to JSONL").click()
    link = page.locator("#export-link")
    await expect(link).to_be_visible()
    href = await link.get_attribute("href")
    assert href and href.startswith("/v1/files/")
    async with httpx.AsyncClient(base_url=console_url, timeout=30) as http:
        exported = (await http.get(href)).text  # a signed link: no key needed
    assert exported.count("\n") == 4 and "from file" in exported and "first" in exported

    # A record in full; delete one.
    await page.get_by_role("button", name="View record").first.click()
    await expect(page.locator(".record")).to_contain_text(f"question {XSS}")
    assert await page.locator("main img, main script").count() == 0
    await shot(page, "datasets")
    await page.get_by_role("button", name="Delete record").first.click()
    await expect(records).to_have_count(3)

    # Rename, then delete the dataset.
    await page.get_by_role("button", name="Rename").click()
    rename = page.get_by_role("form", name="Rename dataset")
    await rename.get_by_label("Name").fill(f"{name} v2")
    await rename.get_by_role("button", name="Save").click()
    await expect(page.locator("#dataset-name")).to_have_text(f"{name} v2")
    await page.get_by_role("button", name="Delete", exact=True).click()
    await page.get_by_role("button", name="Confirm").click()
    await expect(page.get_by_role("button", name=f"{name} v2")).to_have_count(0)
