"""An incremental server-sent-events parser: feed it bytes as they arrive, get `data` payloads."""

from __future__ import annotations


class SSEParser:
    """Splits an SSE byte stream into the `data` payloads of its events.

    Chunks may cut lines (or a CRLF pair) anywhere; several `data:` lines of one event are joined
    with a newline as the SSE specification says. Other fields (`event`, `id`, `retry`) and
    comments are dropped: OpenAI-compatible streams carry everything in `data`.
    """

    __slots__ = ("_data", "_partial")

    def __init__(self) -> None:
        self._partial = b""
        self._data: list[bytes] = []

    def feed(self, chunk: bytes) -> list[bytes]:
        """The payloads of the events that `chunk` completes (often none, often one)."""
        buffer = self._partial + chunk if self._partial else chunk
        tail = b""
        if b"\r" in buffer:
            # A trailing CR may be the first half of a CRLF cut by the read: keep it for later,
            # otherwise it would count as an extra (event-ending) blank line.
            if buffer.endswith(b"\r"):
                buffer, tail = buffer[:-1], b"\r"
            buffer = buffer.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        lines = buffer.split(b"\n")
        self._partial = lines.pop() + tail
        events: list[bytes] = []
        for line in lines:
            self._line(line, events)
        return events

    def close(self) -> list[bytes]:
        """The payload of a last event that the stream ended without a blank line after."""
        events: list[bytes] = []
        if self._partial:
            self._line(self._partial.rstrip(b"\r"), events)
            self._partial = b""
        self._line(b"", events)
        return events

    def _line(self, line: bytes, events: list[bytes]) -> None:
        if not line:
            if self._data:
                events.append(self._data[0] if len(self._data) == 1 else b"\n".join(self._data))
                self._data = []
            return
        if line.startswith(b"data:"):
            value = line[5:]
            self._data.append(value[1:] if value.startswith(b" ") else value)
        elif line == b"data":
            self._data.append(b"")
