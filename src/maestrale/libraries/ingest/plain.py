"""Bytes to text for plain text formats (text, CSV, JSON, code), and the clean-up every page's
text gets whatever its format.

Text is UTF-8 (a UTF-8 or UTF-16 byte order mark is honoured): anything else, binary data
above all, is refused with the offset of the first bad byte rather than read as mojibake.
"""

from __future__ import annotations

import codecs
import re

from maestrale.libraries.ingest.refused import DocumentRefused

# C0 controls other than tab, newline, carriage return and form feed: rare in text, common in
# binary data that happens to decode.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f]")
_CONTROL_SHARE = 0.01
_SAMPLE = 65_536
# What no page's text keeps: controls (a NUL breaks Postgres text), lone surrogates (broken PDF
# fonts produce them; they cannot be encoded), and the byte order mark.
_UNWANTED = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ufeff]")
_SURROGATE = re.compile(r"[\ud800-\udfff]")
_NEWLINES = re.compile(r"\r\n?|[\u2028\u2029\x85]")


def _check_controls(text: str) -> None:
    sample = text[:_SAMPLE]
    if sample and len(_CONTROL.findall(sample)) > _CONTROL_SHARE * len(sample):
        raise DocumentRefused("the file holds binary data (control characters), not text")


def decode_text(data: bytes) -> str:
    """The text of a UTF-8 (or BOM-marked UTF-16) file; `DocumentRefused` for anything else."""
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        try:
            text = data.decode("utf-16")
        except UnicodeDecodeError as exc:
            raise DocumentRefused(f"the file is not valid UTF-16 text: {exc.reason}") from exc
        _check_controls(text)
        return text
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8) :]
    if b"\x00" in data:
        raise DocumentRefused("the file holds binary data (NUL bytes), not text")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DocumentRefused(
            f"the file is not UTF-8 text: invalid byte 0x{data[exc.start]:02x} at offset "
            f"{exc.start} (binary data, or text in another encoding: save it as UTF-8)"
        ) from exc
    _check_controls(text)
    return text


def clean(text: str) -> str:
    """A page's text as stored and chunked: one kind of newline, no control characters, no
    lone surrogates, no trailing blank space."""
    text = _NEWLINES.sub("\n", text)
    text = _UNWANTED.sub("", text)
    text = _SURROGATE.sub("\ufffd", text)
    return text.rstrip()
