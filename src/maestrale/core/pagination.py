"""The spec's three paging styles: numbered pages (0- or 1-based, with totals), opaque cursors,
and keyset conditions that make cursor pages cheap at any depth."""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from typing import Any, cast

import orjson
from sqlalchemy import ColumnElement, and_, or_
from sqlalchemy.orm import InstrumentedAttribute

from maestrale.core.errors import BadRequest

MAX_PAGE_SIZE = 1000
# An OFFSET is a signed 64-bit integer on every backend: a page past it is a 400, not an overflow.
MAX_OFFSET = 2**63 - 1


@dataclass(frozen=True, slots=True)
class PageParams:
    """`page` counted from `first_page` (0 for most groups, 1 for observability)."""

    page: int
    page_size: int
    first_page: int = 0

    def __post_init__(self) -> None:
        if self.page < self.first_page:
            raise BadRequest(
                f"page must be >= {self.first_page}", code="invalid_page", param="page"
            )
        if not 1 <= self.page_size <= MAX_PAGE_SIZE:
            raise BadRequest(
                f"page_size must be between 1 and {MAX_PAGE_SIZE}",
                code="invalid_page_size",
                param="page_size",
            )
        if (self.page - self.first_page) * self.page_size > MAX_OFFSET:
            raise BadRequest(
                f"page is too large for page_size {self.page_size}",
                code="invalid_page",
                param="page",
            )

    @property
    def offset(self) -> int:
        return (self.page - self.first_page) * self.page_size

    @property
    def limit(self) -> int:
        return self.page_size


def encode_cursor(values: dict[str, Any]) -> str:
    """An opaque, URL-safe cursor. Not a secret: queries stay scoped by the caller's tenant."""
    return base64.urlsafe_b64encode(orjson.dumps(values)).decode().rstrip("=")


def decode_cursor(cursor: str) -> dict[str, Any]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        value = orjson.loads(raw)
    except (binascii.Error, ValueError, orjson.JSONDecodeError) as exc:
        raise BadRequest("invalid cursor", code="invalid_cursor", param="cursor") from exc
    if not isinstance(value, dict):
        raise BadRequest("invalid cursor", code="invalid_cursor", param="cursor")
    return value


def keyset_after(
    columns: list[InstrumentedAttribute[Any]], values: list[Any], *, descending: bool = False
) -> ColumnElement[bool]:
    """Rows strictly after `values` in the order of `columns` (all ascending or all descending).

    Written as nested OR/AND rather than a row-value comparison, which SQLite and Postgres both
    plan as an index range scan.
    """
    if len(columns) != len(values) or not columns:
        raise ValueError("keyset needs one value per column")
    col, value = columns[0], values[0]
    beyond = col < value if descending else col > value
    if len(columns) == 1:
        return cast(ColumnElement[bool], beyond)
    return or_(
        beyond, and_(col == value, keyset_after(columns[1:], values[1:], descending=descending))
    )
