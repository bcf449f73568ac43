"""JSONL lines out of arbitrary chunks: the same lines and statistics however the bytes are cut,
and over-long lines reported without being buffered."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator

import pytest

from maestrale.files.lines import TOO_LONG, JsonlStats, LineSplitter, iter_lines

TEXT = b'{"a": 1}\n\n   \n{"b": [1, 2]}\r\n{"c": "x\\ny"}\n[1]\nnot json\n{"last": true}'
EXPECTED = [
    b'{"a": 1}',
    b'{"b": [1, 2]}\r',
    b'{"c": "x\\ny"}',
    b"[1]",
    b"not json",
    b'{"last": true}',
]


def cuts(data: bytes, rng: random.Random) -> list[bytes]:
    points = sorted(rng.sample(range(1, len(data)), rng.randint(0, min(12, len(data) - 1))))
    return [data[a:b] for a, b in zip([0, *points], [*points, len(data)], strict=True)]


@pytest.mark.parametrize("seed", range(40))
def test_any_chunking_gives_the_same_lines_and_stats(seed: int) -> None:
    rng = random.Random(seed)
    chunks = cuts(TEXT, rng)
    splitter = LineSplitter()
    lines = [line for chunk in chunks for line in splitter.feed(chunk)] + splitter.close()
    assert lines == EXPECTED
    stats = JsonlStats()
    for chunk in chunks:
        stats.feed(chunk)
    stats.close()
    assert stats.num_lines == 6
    assert stats.first_error is not None and stats.first_error[0] == 6  # "[1]", 6th physical line
    assert stats.first_keys == frozenset({"a"})


def test_over_long_lines_are_markers() -> None:
    splitter = LineSplitter(max_line=10)
    out = splitter.feed(b"short\n" + b"x" * 8) + splitter.feed(b"y" * 8 + b"\nok\n" + b"z" * 20)
    out += splitter.close()
    assert out == [b"short", TOO_LONG, b"ok", TOO_LONG]
    stats = JsonlStats(max_line=10)
    stats.feed(b'{"a": 1}\n' + b"x" * 30 + b"\n{}\n")
    stats.close()
    assert stats.num_lines == 3 and stats.first_error == (2, "is longer than 10 bytes")


async def test_iter_lines_closes_its_source_when_stopped_early() -> None:
    closed = []

    async def source() -> AsyncIterator[bytes]:
        try:
            for _ in range(10):
                yield b"line\n"
        finally:
            closed.append(True)

    lines = iter_lines(source())
    assert await anext(lines) == b"line"
    await lines.aclose()
    assert closed == [True]
