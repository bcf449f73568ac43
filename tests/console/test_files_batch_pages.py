"""The files and batch pages in a real browser: upload with progress, list, download, delete;
a batch job created from an uploaded file, watched to its end, its output and error files."""

from __future__ import annotations

import json
import uuid

from playwright.async_api import Page, expect

from tests.console.conftest import shot, signed_in

XSS_NAME = "<img src=x onerror=alert(1)>.jsonl"


async def test_upload_list_download_and_delete_a_file(page: Page) -> None:
    await signed_in(page)
    await page.get_by_role("link", name="Files").click()
    await expect(page.locator("main h1")).to_have_text("Files")
    # The empty state (a search that matches nothing).
    await page.get_by_label("Search").fill(f"nothing-{uuid.uuid4().hex}")
    await page.get_by_role("button", name="Search", exact=True).click()
    await expect(page.locator("p.empty")).to_have_text("No file matches.")
    await page.get_by_label("Search").fill("")
    # A few megabytes, so that the upload reports progress on its way.
    content = (json.dumps({"custom_id": "x", "body": {"n": "y" * 100}}) + "\n") * 30_000
    await page.get_by_label("File", exact=True).set_input_files(
        {"name": XSS_NAME, "mimeType": "application/jsonl", "buffer": content.encode()}
    )
    await page.get_by_label("Purpose").select_option("batch")
    await page.get_by_role("button", name="Upload").click()
    await expect(page.get_by_role("status").filter(has_text="Uploaded")).to_contain_text(
        f"Uploaded {XSS_NAME}"
    )
    await expect(page.locator("form progress")).to_have_js_property("value", 1)
    row = page.locator("tbody tr", has_text=XSS_NAME).first
    await expect(row).to_be_visible()
    await expect(row.locator("td").first).to_have_text(XSS_NAME)
    assert await page.locator("main img").count() == 0
    await expect(row).to_contain_text("30000")  # lines
    await shot(page, "files")
    async with page.expect_download() as waiting:
        await row.get_by_role("button", name="Download").click()
    downloaded = await waiting.value
    # The browser's own download name (Chromium turns < and > into _).
    assert downloaded.suggested_filename == XSS_NAME.replace("<", "_").replace(">", "_")
    path = await downloaded.path()
    assert path.read_bytes() == content.encode()
    delete = row.get_by_role("button", name="Delete")
    await delete.click()
    await expect(delete).to_have_text("Confirm delete")
    await delete.click()
    await expect(page.locator("tbody tr", has_text=XSS_NAME)).to_have_count(0)


async def test_a_batch_job_runs_and_shows_its_output_and_errors(page: Page) -> None:
    await signed_in(page)
    await page.get_by_role("link", name="Batch").click()
    await expect(page.locator("main h1")).to_have_text("Batch")
    name = f"requests-{uuid.uuid4().hex[:8]}.jsonl"
    lines = [
        {"custom_id": "a", "body": {"messages": [{"role": "user", "content": "first <b>x</b>"}]}},
        {"custom_id": "b", "body": {"messages": [{"role": "user", "content": "second"}]}},
        {"custom_id": "c", "body": {"messages": [{"role": "user", "content": "/fail 400"}]}},
    ]
    jsonl = "".join(json.dumps(line) + "\n" for line in lines)
    upload = page.get_by_role("form", name="Upload an input file")
    await upload.get_by_label("File", exact=True).set_input_files(
        {"name": name, "mimeType": "application/jsonl", "buffer": jsonl.encode()}
    )
    await upload.get_by_role("button", name="Upload").click()
    create = page.get_by_role("form", name="Create a batch job")
    # The new file is chosen as the job's input.
    await expect(create.get_by_label("Input file").locator("option:checked")).to_contain_text(name)
    await expect(create.get_by_label("Model")).to_have_value("maestrale-echo")
    await create.get_by_role("button", name="Create job").click()
    job = page.get_by_role("region", name="Batch job", exact=True)
    # Live progress: the card moves to the final status by itself (polling).
    await expect(job.locator(".badge")).to_have_text("SUCCESS", timeout=60_000)
    await expect(job).to_contain_text("2 succeeded, 1 failed")
    await expect(job.locator(".progress-cell")).to_contain_text("3 / 3")
    await job.get_by_role("button", name="Show output").click()
    output = job.locator("pre").first
    await expect(output).to_contain_text("echo: first <b>x</b>")
    await expect(output).to_contain_text("echo: second")
    await job.get_by_role("button", name="Show errors").click()
    errors = job.locator("pre").nth(1)
    await expect(errors).to_contain_text('"custom_id":"c"')
    await expect(errors).to_contain_text("builtin engine failure requested: 400")
    assert await page.locator("main b").count() == 0
    # The job is in the list, and the page keeps it open across a reload (?job=).
    await expect(page.locator("tbody tr").first).to_contain_text("SUCCESS")
    await shot(page, "batch")
    await page.reload()
    await expect(
        page.get_by_role("region", name="Batch job", exact=True).locator(".badge")
    ).to_have_text("SUCCESS")


async def test_a_bad_job_shows_the_api_s_error(page: Page) -> None:
    await signed_in(page)
    await page.goto("/console/batch?job=no-such-job")
    job = page.get_by_role("region", name="Batch job", exact=True)
    await expect(job.locator(".error")).to_contain_text("HTTP 404")


async def test_files_and_batch_fit_a_phone(phone_page: Page) -> None:
    page = await signed_in(phone_page)
    for path, name in (("/console/files", "files-phone"), ("/console/batch", "batch-phone")):
        await page.goto(path)
        await expect(page.locator("main h1")).to_be_visible()
        await expect(page.locator("main .loading")).to_have_count(0)
        # Wide tables scroll inside their box; the page itself never scrolls sideways.
        assert await page.evaluate("document.documentElement.scrollWidth") <= 390, path
        await shot(page, name)
