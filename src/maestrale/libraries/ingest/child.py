"""The child process that parses one DOCX, HTML, Markdown or text document (see `isolated`).

Run as `python -m maestrale.libraries.ingest.child '<bounds as JSON>'`: it bounds itself
(RLIMIT_AS, RLIMIT_CPU) before it reads anything, reads the document from stdin to its end,
and writes to stdout frames of an 8-byte length and a payload: a JSON header (`{"pages": n}`,
or `{"refused": reason}`), then each page's text in UTF-8. It imports only the parsers it
needs, never the server's modules: its start is a small part of its cost.
"""

from __future__ import annotations

import json
import math
import re
import resource
import sys
from itertools import islice
from typing import Any, BinaryIO

from maestrale.libraries.ingest.refused import DocumentRefused

_HTML_TAG = re.compile(rb"<[A-Za-z]")
# Markdown: a line makes a block of up to 4 tokens (a list item: its open and close, its
# paragraph's, its inline text), and an inline mark (emphasis, code, link, tag) one more.
_MARKDOWN_LINE = 4
_MARKDOWN_MARKS = (b"*", b"_", b"`", b"[", b"<")
_REASON_CHARS = 2000


def mib(size: int) -> str:
    return f"{size / (1024 * 1024):g} MiB"


def frame(payload: bytes) -> bytes:
    return len(payload).to_bytes(8, "big") + payload


def main(bounds: dict[str, Any], stdin: BinaryIO, stdout: BinaryIO) -> None:
    # Written before the bound is set, so that saying it takes no memory the child may lack.
    memory = int(bounds["memory_bytes"])
    out_of_memory = frame(
        json.dumps(
            {"refused": f"reading the document needed over {mib(memory)} of memory"}
        ).encode()
    )
    cpu = math.ceil(float(bounds["parse_seconds"]))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    answer: list[bytes] | None = None
    try:
        pages = read(str(bounds["reader"]), stdin.read(), bounds)
        answer = [frame(json.dumps({"pages": len(pages)}).encode())]
        answer += [frame(page.encode("utf-8", "surrogatepass")) for page in pages]
        del pages
    except DocumentRefused as exc:
        answer = [_refused(exc.reason, out_of_memory)]
    except MemoryError:
        pass  # answered below, once the frames that hold the parsed tree are gone
    except Exception as exc:  # a parser's own failure on hostile input is the document's
        answer = [_refused(f"the document cannot be read: {type(exc).__name__}: {exc}", b"")]
    for message in answer or [out_of_memory]:
        stdout.write(message)
    stdout.flush()


def _refused(reason: str, out_of_memory: bytes) -> bytes:
    # libxml2 reports an allocation that failed as a syntax error: say what it was.
    if out_of_memory and "memory allocation failed" in reason.lower():
        return out_of_memory
    return frame(json.dumps({"refused": reason[:_REASON_CHARS]}).encode())


def read(reader: str, data: bytes, bounds: dict[str, Any]) -> list[str]:
    """The document's pages, cleaned; `DocumentRefused` over a bound."""
    from maestrale.libraries.ingest.plain import clean, decode_text

    max_elements = int(bounds["max_elements"])
    max_chars = int(bounds["max_text_chars"])
    if reader == "docx":
        from maestrale.libraries.ingest import docx_reader

        pages = docx_reader.read_docx(data, int(bounds["max_unpacked_bytes"]), max_elements)
        if len(pages) > int(bounds["max_pages"]):
            raise DocumentRefused(f"the document has over {bounds['max_pages']} pages")
    elif reader == "html":
        from maestrale.libraries.ingest import markup

        if b"\x00" in data:
            raise DocumentRefused("the file holds binary data (NUL bytes), not HTML")
        tags = sum(1 for _ in islice(_HTML_TAG.finditer(data), max_elements + 1))
        _check_elements(tags, "HTML", max_elements)
        pages = [markup.html_text(data)]
    else:
        text = decode_text(data)
        if len(text) > max_chars:
            raise DocumentRefused(f"the document has over {max_chars} characters of text")
        if reader == "markdown":
            from maestrale.libraries.ingest import markup

            tokens = _MARKDOWN_LINE * data.count(b"\n")
            tokens += sum(data.count(mark) for mark in _MARKDOWN_MARKS)
            _check_elements(tokens, "Markdown", max_elements)
            pages = [markup.markdown_text(text)]
        else:
            pages = [text]
    return [clean(page) for page in pages]


def _check_elements(count: int, kind: str, limit: int) -> None:
    if count > limit:
        raise DocumentRefused(f"the {kind} document has over {limit} elements, over the bound")


if __name__ == "__main__":
    main(json.loads(sys.argv[1]), sys.stdin.buffer, sys.stdout.buffer)
