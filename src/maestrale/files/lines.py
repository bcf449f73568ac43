"""JSONL lines out of byte chunks, in bounded memory: what upload statistics and batch jobs read.

A line is the text between newlines; blank (whitespace-only) lines are not lines of the file, so
that `num_lines` of an upload and the line numbers of a batch job count the same things. A line
longer than `max_line` is not buffered: it is reported as `TOO_LONG` once its end is reached.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any, Final

import orjson

MAX_LINE_BYTES: Final = 16 * 1024 * 1024
TOO_LONG: Final = b""  # the marker of an over-long line (a real line is never empty)


def _filled(line: bytes | bytearray) -> bool:
    return bool(line) and not line.isspace()


class LineSplitter:
    """Feed chunks, get the complete non-blank lines so far; `close()` gives the last one."""

    def __init__(self, max_line: int = MAX_LINE_BYTES) -> None:
        self.max_line = max_line
        self._carry = bytearray()
        self._overflow = False

    def feed(self, chunk: bytes) -> list[bytes]:
        pieces = chunk.split(b"\n")
        out: list[bytes] = []
        for i, piece in enumerate(pieces):
            last = i == len(pieces) - 1
            if self._overflow or len(self._carry) + len(piece) > self.max_line:
                self._overflow = True
                self._carry.clear()
            elif self._carry:
                self._carry += piece
            elif not last:
                # The common case, a whole line inside one chunk: no copy into the carry.
                if _filled(piece):
                    out.append(piece)
                continue
            else:
                self._carry += piece
            if not last:
                self._end_line(out)
        return out

    def _end_line(self, out: list[bytes]) -> None:
        if self._overflow:
            out.append(TOO_LONG)
        elif _filled(self._carry):
            out.append(bytes(self._carry))
        self._carry.clear()
        self._overflow = False

    def close(self) -> list[bytes]:
        out: list[bytes] = []
        self._end_line(out)
        return out


async def iter_lines(
    chunks: AsyncIterator[bytes], max_line: int = MAX_LINE_BYTES
) -> AsyncGenerator[bytes]:
    """The non-blank lines of a byte stream (`TOO_LONG` for an over-long one)."""
    splitter = LineSplitter(max_line)
    try:
        async for chunk in chunks:
            for line in splitter.feed(chunk):
                yield line
        for line in splitter.close():
            yield line
    finally:
        aclose = getattr(chunks, "aclose", None)
        if aclose is not None:  # a reader stopping early closes the stream (and its file)
            await aclose()


class JsonlStats:
    """Counts the lines of an upload and checks that each is a JSON object, as it streams by.

    `first_error` is `(line number, reason)` of the first line that is not a JSON object; line
    numbers count every physical line from 1, as an editor shows them.
    """

    def __init__(self, max_line: int = MAX_LINE_BYTES) -> None:
        self.max_line = max_line
        self.num_lines = 0
        self.first_error: tuple[int, str] | None = None
        self.first_keys: frozenset[str] = frozenset()
        self._physical = 0
        self._carry = bytearray()
        self._overflow = False

    def feed(self, chunk: bytes) -> None:
        pieces = chunk.split(b"\n")
        for i, piece in enumerate(pieces):
            last = i == len(pieces) - 1
            if self._overflow or len(self._carry) + len(piece) > self.max_line:
                self._overflow = True
                self._carry.clear()
            elif self._carry or last:
                self._carry += piece
            else:
                self._line(piece)
                continue
            if not last:
                self._line(bytes(self._carry))

    def _line(self, line: bytes) -> None:
        self._physical += 1
        overflow, self._overflow = self._overflow, False
        self._carry.clear()
        if overflow:
            self.num_lines += 1
            self._fail(f"is longer than {self.max_line} bytes")
            return
        if not _filled(line):
            return
        self.num_lines += 1
        if self.first_error is not None:
            return  # counting only: the first bad line is what gets reported
        try:
            value: Any = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            self._fail(f"is not valid JSON ({exc})")
            return
        if not isinstance(value, dict):
            self._fail(f"is a JSON {type(value).__name__}, not an object")
        elif self.num_lines == 1:
            self.first_keys = frozenset(value)

    def _fail(self, reason: str) -> None:
        if self.first_error is None:
            self.first_error = (self._physical, reason)

    def close(self) -> None:
        if self._carry or self._overflow:
            self._line(bytes(self._carry))
