"""Text formats (DOCX, HTML, Markdown, plain text) are parsed in a child process with bounds.

A hostile document can cost a parser far more than its size: a DOCX of 600 kB that unpacks to
200 million paragraphs, a flat HTML file of a few megabytes that BeautifulSoup turns into a
gigabyte of objects and a minute of CPU. A thread cannot be stopped, and its memory is the
server's; so each document is parsed by a process of its own (`child`), which the kernel bounds:
- `RLIMIT_AS`, its address space (`memory_bytes`): an allocation past it fails (MemoryError);
- `RLIMIT_CPU`, its processor time (`parse_seconds`): the kernel ends it with SIGXCPU;
- the wall clock (`parse_seconds` again): the parent kills it (SIGKILL);
- what it sends back: about 4 bytes per character of `max_text_chars` at most, refused unread
  past that.
Before a parser builds a tree, the child counts the document's elements (start tags of every XML
part of a DOCX, tags of an HTML file, lines and inline marks of Markdown) against
`max_elements`, which bounds that tree.

A child is a new interpreter that imports only the parser it needs (no fork of the server,
whose threads and descriptors it must not share): 20 to 100 ms of a processor per document,
small beside embedding its text. The parent drives it from a thread of its own, so that neither
the event loop nor the default executor waits for it: other documents go on meanwhile.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
from dataclasses import asdict, dataclass
from typing import IO

from maestrale.libraries.ingest.child import mib
from maestrale.libraries.ingest.errors import Unreadable

__all__ = ["Bounds", "read_isolated"]

_HEADER_BYTES = 64 * 1024
# What the child keeps of the server's environment: not its keys and secrets.
_ENVIRONMENT = ("PATH", "PYTHONPATH", "LANG", "LC_ALL", "TMPDIR")


@dataclass(frozen=True, slots=True)
class Bounds:
    """What parsing one document may cost (`Limits.bounds()`)."""

    max_pages: int
    max_unpacked_bytes: int
    max_text_chars: int
    max_elements: int
    memory_bytes: int
    parse_seconds: float

    @property
    def max_output_bytes(self) -> int:
        """What the child may send back: 4 UTF-8 bytes a character, and the pages' framing."""
        return 4 * self.max_text_chars + 8 * (self.max_pages + 1) + _HEADER_BYTES


async def read_isolated(reader: str, data: bytes, bounds: Bounds) -> list[str]:
    """The pages of a DOCX, HTML, Markdown or text document, parsed in a bounded child
    process; `Unreadable` with the bound it went over."""
    loop = asyncio.get_running_loop()
    result: asyncio.Future[list[str]] = loop.create_future()
    run = _Run(reader, data, bounds)

    def settle(outcome: list[str] | BaseException) -> None:
        if result.done():  # cancelled meanwhile
            return
        if isinstance(outcome, BaseException):
            result.set_exception(outcome)
        else:
            result.set_result(outcome)

    def wait() -> None:
        try:
            outcome: list[str] | BaseException = run.wait()
        except BaseException as exc:  # handed to the awaiting task, whatever it is
            outcome = exc
        loop.call_soon_threadsafe(settle, outcome)

    threading.Thread(target=wait, name="library-reader", daemon=True).start()
    try:
        return await result
    except asyncio.CancelledError:
        run.kill()  # the document's time is up (or its job stopped): so is the child's
        raise


class _Run:
    """One child reading one document, driven from a thread of the parent."""

    def __init__(self, reader: str, data: bytes, bounds: Bounds) -> None:
        self.reader = reader
        self.data = data
        self.bounds = bounds
        self.timed_out = False
        self.lock = threading.Lock()  # killed from the loop's thread or the timer's
        self.process: subprocess.Popen[bytes] | None = None
        self.cancelled = False

    def kill(self, *, timed_out: bool = False) -> None:
        with self.lock:
            self.timed_out = self.timed_out or timed_out
            self.cancelled = True
            if self.process is not None and self.process.returncode is None:
                self.process.kill()  # not yet waited for: the pid is still the child's

    def wait(self) -> list[str]:
        header = json.dumps({"reader": self.reader, **asdict(self.bounds)})
        with self.lock:
            if self.cancelled:
                raise asyncio.CancelledError
            self.process = subprocess.Popen(
                [sys.executable, "-m", "maestrale.libraries.ingest.child", header],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                close_fds=True,
                env={name: os.environ[name] for name in _ENVIRONMENT if name in os.environ},
            )
        process = self.process
        assert process.stdin is not None and process.stdout is not None
        timer = threading.Timer(self.bounds.parse_seconds, self.kill, kwargs={"timed_out": True})
        timer.start()
        try:
            try:
                process.stdin.write(self.data)
                process.stdin.close()
            except BrokenPipeError:
                pass  # it ended before reading it all: its status says why
            self.data = b""
            return self._receive(process.stdout)
        finally:
            timer.cancel()
            for pipe in (process.stdin, process.stdout):
                with contextlib.suppress(OSError):  # what was left to write goes nowhere
                    pipe.close()
            self.kill()
            process.wait()

    def _receive(self, stdout: IO[bytes]) -> list[str]:
        header = self._frame(stdout, _HEADER_BYTES)
        if header is None:
            raise self._died()
        answer = json.loads(header)
        if "refused" in answer:
            raise Unreadable(str(answer["refused"]))
        left = self.bounds.max_output_bytes
        pages: list[str] = []
        for _ in range(min(int(answer["pages"]), self.bounds.max_pages)):
            page = self._frame(stdout, left)
            if page is None:
                raise self._died()
            left -= len(page)
            pages.append(page.decode("utf-8", "surrogatepass"))
        return pages

    def _frame(self, stdout: IO[bytes], most: int) -> bytes | None:
        """The next frame's payload, None at an early end; `Unreadable` past `most` bytes."""
        prefix = stdout.read(8)
        if len(prefix) < 8:
            return None
        size = int.from_bytes(prefix, "big")
        if size > most:  # not read: the child is killed with what it holds
            raise Unreadable(
                f"the document has over {self.bounds.max_text_chars} characters of text"
            )
        payload = stdout.read(size)
        return payload if len(payload) == size else None

    def _died(self) -> Unreadable:
        """Why the child ended without an answer."""
        assert self.process is not None
        code = self.process.wait()
        seconds = f"{self.bounds.parse_seconds:g}"
        if self.timed_out:
            return Unreadable(f"reading the document took over {seconds} seconds")
        if code == -signal.SIGXCPU:
            return Unreadable(f"reading the document took over {seconds} seconds of processor")
        how = f"signal {signal.Signals(-code).name}" if code < 0 else f"status {code}"
        return Unreadable(
            f"the document's reader stopped ({how}), most likely over its memory bound of "
            f"{mib(self.bounds.memory_bytes)}"
        )
