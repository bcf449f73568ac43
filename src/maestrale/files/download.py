"""Downloads: HTTP Range (one range; RFC 9110 §14), Content-Disposition with any file name, and
the signed links that open a download without a key."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from urllib.parse import quote

from maestrale.core.errors import AppError, Forbidden

_RANGE = re.compile(r"^\s*bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*$", re.IGNORECASE)


class RangeNotSatisfiable(AppError):
    status_code = 416
    code = "range_not_satisfiable"

    def __init__(self, size: int) -> None:
        super().__init__(
            f"the range is outside the file ({size} bytes)",
            headers={"Content-Range": f"bytes */{size}"},
        )


@dataclass(frozen=True, slots=True)
class ByteRange:
    start: int
    end: int  # exclusive

    @property
    def length(self) -> int:
        return self.end - self.start


def parse_range(header: str | None, size: int) -> ByteRange | None:
    """The one range asked for, or None to send the whole file (no header, a header this server
    ignores: several ranges, another unit or a malformed one). 416 if it misses the file."""
    if not header:
        return None
    match = _RANGE.match(header)
    if match is None:
        return None
    first, last = match.groups()
    if not first and not last:
        return None
    if not first:  # the last N bytes
        suffix = _position(last)
        if suffix == 0:
            raise RangeNotSatisfiable(size)
        return ByteRange(max(0, size - suffix), size)
    start = _position(first)
    end = size if not last else min(size, _position(last) + 1)
    if last and _position(last) < start:
        return None  # invalid: ignored, as the RFC says
    if start >= size:
        raise RangeNotSatisfiable(size)
    return ByteRange(start, end)


# Past any file's size: a position of more digits means the same (int() refuses 4,300+ digits).
_BEYOND = 2**63


def _position(digits: str) -> int:
    digits = digits.lstrip("0") or "0"
    return int(digits) if len(digits) < 19 else _BEYOND


def content_disposition(filename: str) -> str:
    """`attachment` with an ASCII fallback name and the exact name in RFC 5987 form."""
    ascii_name = unicodedata.normalize("NFKD", filename).encode("ascii", "ignore").decode()
    ascii_name = re.sub(r"[^A-Za-z0-9._ ()\[\]-]", "_", ascii_name).strip() or "download"
    return f"attachment; filename=\"{ascii_name}\"; filename*=UTF-8''{quote(filename, safe='')}"


def signed_message(file_id: str, expires: int) -> str:
    return f"files:{file_id}:{expires}"


class SignatureInvalid(Forbidden):
    code = "invalid_signature"


class SignatureExpired(Forbidden):
    code = "signature_expired"
