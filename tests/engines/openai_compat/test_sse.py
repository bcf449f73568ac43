"""The incremental SSE parser, fed however the network happens to cut the bytes."""

from __future__ import annotations

import pytest

from maestrale.engines.openai_compat.sse import SSEParser

STREAM = (
    b": keep-alive comment\r\n"
    b'data: {"a": 1}\r\n\r\n'
    b"event: message\n"
    b"id: 7\n"
    b"data: first line\n"
    b"data:second line\n\n"
    b"data: [DONE]\n\n"
)
EVENTS = [b'{"a": 1}', b"first line\nsecond line", b"[DONE]"]


def feed_in_pieces(data: bytes, size: int) -> list[bytes]:
    parser = SSEParser()
    events: list[bytes] = []
    for start in range(0, len(data), size):
        events.extend(parser.feed(data[start : start + size]))
    events.extend(parser.close())
    return events


@pytest.mark.parametrize("size", [1, 2, 3, 7, 64, 10_000])
def test_events_whatever_the_cuts(size: int) -> None:
    assert feed_in_pieces(STREAM, size) == EVENTS


def test_crlf_cut_between_cr_and_lf_is_one_line_end() -> None:
    parser = SSEParser()

    assert parser.feed(b"data: x\r") == []
    assert parser.feed(b"\n\r") == []
    assert parser.feed(b"\ndata: y\r\n\r\n") == [b"x", b"y"]


def test_bare_cr_line_ends() -> None:
    assert feed_in_pieces(b"data: x\r\rdata: y\r\r", 1) == [b"x", b"y"]


def test_an_event_is_complete_only_after_its_blank_line() -> None:
    parser = SSEParser()

    assert parser.feed(b"data: x\n") == []
    assert parser.feed(b"\n") == [b"x"]


def test_last_event_without_blank_line_is_flushed_at_close() -> None:
    parser = SSEParser()

    assert parser.feed(b"data: x\n\ndata: tail") == [b"x"]
    assert parser.close() == [b"tail"]
