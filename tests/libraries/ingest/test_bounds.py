"""Documents that explode: each bound of reading (elements, time, memory, scanned pages) stops
its document with the bound in the reason, in a child process that nothing outlives; the other
documents read meanwhile are not held up. Bounds are set low here to stay quick."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest

from maestrale.engines.ocr_types import OcrImage, OcrLine
from maestrale.libraries.ingest.errors import Unreadable
from maestrale.libraries.ingest.extract import ExtractionLimits, extract
from tests.libraries.ingest import samples


def readers() -> list[int]:
    """The reading child processes of this process that are still alive."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            command = (stat.parent / "cmdline").read_bytes()
        except OSError:
            continue
        alive = fields[0] not in ("Z", "X")
        if alive and int(fields[1]) == os.getpid() and b"ingest.child" in command:
            found.append(int(stat.parent.name))
    return found


async def refused(data: bytes, name: str, **bounds: Any) -> str:
    with pytest.raises(Unreadable) as caught:
        await extract(data, name, None, None, limits=ExtractionLimits(**bounds))
    return caught.value.reason


async def test_docx_bomb_of_paragraphs_is_refused_before_it_is_parsed() -> None:
    bomb = samples.docx_of_paragraphs(2_000_000)  # 12 MB of XML: minutes of python-docx
    assert len(bomb) < 100 * 1024
    # Under the unpacked-size bound: the element count is what stops it, well before the time.
    reason = await refused(bomb, "bomb.docx", max_elements=100_000, parse_seconds=60)
    assert reason.startswith("the DOCX document has over 100000 elements")
    # Its parts are counted whatever their names: python-docx follows the relationships.
    renamed = samples.docx_renamed(bomb)
    reason = await refused(renamed, "bomb.docx", max_elements=100_000, parse_seconds=60)
    assert reason.startswith("the DOCX document has over 100000 elements")


async def test_flat_html_over_the_element_bound() -> None:
    fits = b"<p>x</p>" * 1_000
    assert (
        await extract(fits, "a.html", None, None, limits=ExtractionLimits(max_elements=1_000))
    ).pages
    reason = await refused(fits + b"<p>y</p>", "a.html", max_elements=1_000)
    assert reason == "the HTML document has over 1000 elements, over the bound"
    lines = b"- item\n" * 250  # up to 4 tokens a line
    assert (
        await extract(lines, "a.md", None, None, limits=ExtractionLimits(max_elements=1_000))
    ).pages
    reason = await refused(lines + b"- more\n", "a.md", max_elements=1_000)
    assert reason == "the Markdown document has over 1000 elements, over the bound"


async def test_a_document_over_the_time_bound_is_stopped() -> None:
    slow = samples.docx_of_paragraphs(200_000, "word")  # about a minute of python-docx
    reason = await refused(slow, "slow.docx", max_elements=10_000_000, parse_seconds=1)
    assert reason in (
        "reading the document took over 1 seconds",  # the wall clock
        "reading the document took over 1 seconds of processor",  # or RLIMIT_CPU, first
    )


async def test_a_document_over_the_memory_bound_is_stopped() -> None:
    bound = 96 * 1024 * 1024  # the child's interpreter and parsers take about 42 MiB
    small = b"<p>" + b"word " * 100 + b"</p>"
    assert await extract(
        small, "a.html", None, None, limits=ExtractionLimits(parse_memory_bytes=bound)
    )
    big = b"<p>x</p>" * 100_000  # about 110 MB of BeautifulSoup objects
    reason = await refused(big, "big.html", max_elements=1_000_000, parse_memory_bytes=bound)
    # A MemoryError, or (with another build of libxml2) a crash, once the bound is reached.
    assert reason in (
        "reading the document needed over 96 MiB of memory",
        "the document's reader stopped (signal SIGSEGV), most likely over its memory bound of "
        "96 MiB",
    )


class UnusedOcr:
    """An engine that must not be reached: the bound refuses the scan before it is rendered."""

    async def recognize(self, image: OcrImage) -> list[OcrLine]:
        raise AssertionError("recognised past the bound")


async def test_scanned_pages_over_the_ocr_bound() -> None:
    scans = samples.scanned_pdf(pages=2)
    with pytest.raises(Unreadable) as caught:
        await extract(
            scans, "scans.pdf", None, UnusedOcr(), limits=ExtractionLimits(max_ocr_pages=0)
        )
    assert caught.value.reason == (
        "the document has over 0 scanned pages to recognise (page 1 is one more)"
    )


async def test_other_documents_are_read_while_a_bomb_is_parsed_and_it_is_killed() -> None:
    slow = samples.docx_of_paragraphs(200_000, "word")
    bomb = asyncio.create_task(
        extract(slow, "slow.docx", None, None, limits=ExtractionLimits(max_elements=10_000_000))
    )
    for _ in range(5):
        small = await extract(b"<p>another workspace's notes</p>", "n.html", None, None)
        assert small.pages == ["another workspace's notes"]
    assert not bomb.done() and len(readers()) == 1
    bomb.cancel()  # its time is up, or its job stopped: the child is killed with it
    with pytest.raises(asyncio.CancelledError):
        await bomb
    for _ in range(100):
        if not readers():
            break
        await asyncio.sleep(0.05)
    assert readers() == []
