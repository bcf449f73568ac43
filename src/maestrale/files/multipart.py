"""A multipart/form-data body parsed as it arrives, so that a file part can be streamed straight
to blob storage: nothing of the file is held in memory beyond the chunk at hand.

`MultipartReader.events()` yields, in body order, `FormField`s, and for a file part a `FilePart`
followed by its data (`bytes`) and `FILE_END`. Form fields are small and bounded.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from python_multipart.exceptions import FormParserError
from python_multipart.multipart import (
    MAX_BOUNDARY_LENGTH,
    MultipartParser,
    parse_options_header,
)

from maestrale.core.blobs import CHUNK
from maestrale.core.errors import BadRequest, UnsupportedMediaType

if TYPE_CHECKING:
    from python_multipart.multipart import MultipartCallbacks

MAX_FIELD_BYTES: Final = 64 * 1024
MAX_PARTS: Final = 64


@dataclass(frozen=True, slots=True)
class FormField:
    name: str
    value: str


@dataclass(frozen=True, slots=True)
class FilePart:
    name: str
    filename: str
    content_type: str | None


class _FileEnd:
    pass


FILE_END: Final = _FileEnd()
Event = FormField | FilePart | bytes | _FileEnd


class MalformedBody(BadRequest):
    code = "invalid_multipart"


def boundary_of(content_type: str | None) -> bytes:
    """The boundary of a multipart/form-data Content-Type; 415 for any other body type."""
    media, params = parse_options_header(content_type or "")
    if media != b"multipart/form-data":
        raise UnsupportedMediaType(
            "the body must be multipart/form-data with a `file` part", code="multipart_required"
        )
    boundary = params.get(b"boundary")
    if not boundary:
        raise MalformedBody("the multipart Content-Type has no boundary")
    if len(boundary) > MAX_BOUNDARY_LENGTH:  # RFC 2046 says 70; the parser takes up to this
        raise MalformedBody(
            f"the multipart boundary is longer than {MAX_BOUNDARY_LENGTH} characters"
        )
    return boundary


class MultipartReader:
    def __init__(self, content_type: str | None, body: AsyncIterator[bytes]) -> None:
        self._boundary = boundary_of(content_type)
        self._body = body
        self._pending: list[Event] = []
        self._headers: list[tuple[bytes, bytes]] = []
        self._header_name = bytearray()
        self._header_value = bytearray()
        self._field: tuple[str, bytearray] | None = None
        self._in_file = False
        self._parts = 0

    # Parser callbacks: they only queue events, consumed by `events()`.
    def _on_part_begin(self) -> None:
        self._headers = []
        self._parts += 1
        if self._parts > MAX_PARTS:
            raise MalformedBody(f"more than {MAX_PARTS} parts in the body")

    def _on_header_field(self, data: bytes, start: int, end: int) -> None:
        self._header_name += data[start:end]

    def _on_header_value(self, data: bytes, start: int, end: int) -> None:
        self._header_value += data[start:end]

    def _on_header_end(self) -> None:
        self._headers.append((bytes(self._header_name).lower(), bytes(self._header_value)))
        self._header_name.clear()
        self._header_value.clear()

    def _on_headers_finished(self) -> None:
        headers = dict(self._headers)
        _, options = parse_options_header(headers.get(b"content-disposition", b""))
        if b"name" not in options:
            raise MalformedBody("a multipart part has no Content-Disposition name")
        name = options[b"name"].decode("utf-8", "replace")
        if b"filename" in options:
            filename = options[b"filename"].decode("utf-8", "replace")
            content_type = headers.get(b"content-type")
            ctype = content_type.decode("latin-1").strip() if content_type else None
            self._pending.append(FilePart(name, filename, ctype or None))
            self._in_file = True
        else:
            self._field = (name, bytearray())

    def _on_part_data(self, data: bytes, start: int, end: int) -> None:
        if self._in_file:
            self._pending.append(data[start:end])
            return
        assert self._field is not None
        self._field[1].extend(data[start:end])
        if len(self._field[1]) > MAX_FIELD_BYTES:
            raise MalformedBody(f"form field {self._field[0]!r} exceeds {MAX_FIELD_BYTES} bytes")

    def _on_part_end(self) -> None:
        if self._in_file:
            self._pending.append(FILE_END)
            self._in_file = False
        elif self._field is not None:
            name, value = self._field
            self._pending.append(FormField(name, value.decode("utf-8", "replace")))
            self._field = None

    async def events(self) -> AsyncIterator[Event]:
        """The body's events in order; `MalformedBody` (400) if it is not valid multipart."""
        callbacks: MultipartCallbacks = {
            "on_part_begin": self._on_part_begin,
            "on_part_data": self._on_part_data,
            "on_part_end": self._on_part_end,
            "on_header_field": self._on_header_field,
            "on_header_value": self._on_header_value,
            "on_header_end": self._on_header_end,
            "on_headers_finished": self._on_headers_finished,
        }
        parser = MultipartParser(self._boundary, callbacks)
        try:
            async for chunk in self._body:
                parser.write(chunk)
                pending, self._pending = self._pending, []
                for event in pending:
                    yield event
            parser.finalize()
        except FormParserError as exc:
            raise MalformedBody(f"malformed multipart body: {exc}") from exc
        for event in self._pending:
            yield event
        self._pending = []
        if self._in_file or self._field is not None:
            raise MalformedBody("the multipart body ended in the middle of a part")


async def file_chunks(
    events: AsyncIterator[Event], sink: Callable[[bytes], None]
) -> AsyncIterator[bytes]:
    """The file part's data from the event stream, regrouped into chunks of about CHUNK bytes."""
    buffer = bytearray()
    async for event in events:
        if event is FILE_END:
            break
        assert isinstance(event, bytes)
        buffer += event
        if len(buffer) >= CHUNK:
            chunk = bytes(buffer)
            buffer.clear()
            sink(chunk)
            yield chunk
    if buffer:
        chunk = bytes(buffer)
        sink(chunk)
        yield chunk
