"""Paging helpers: numbered pages, opaque cursors, keyset conditions on a real table."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from maestrale.core.auth.repository import TenancyRepository
from maestrale.core.auth.tables import Organization
from maestrale.core.db import Database
from maestrale.core.errors import BadRequest
from maestrale.core.pagination import PageParams, decode_cursor, encode_cursor, keyset_after

pytestmark = pytest.mark.both_databases("maestrale.core.repository")


def test_page_offsets_for_both_bases() -> None:
    assert PageParams(0, 10).offset == 0
    assert PageParams(3, 10).offset == 30
    assert PageParams(1, 50, first_page=1).offset == 0
    assert PageParams(2, 50, first_page=1).offset == 50


@pytest.mark.parametrize(
    ("page", "size", "first"), [(-1, 10, 0), (0, 10, 1), (0, 0, 0), (0, 1001, 0)]
)
def test_bad_pages_are_400(page: int, size: int, first: int) -> None:
    with pytest.raises(BadRequest):
        PageParams(page, size, first_page=first)


def test_cursor_round_trip_and_garbage() -> None:
    cursor = encode_cursor({"created_at": "2026-01-01T00:00:00Z", "id": "x"})
    assert decode_cursor(cursor) == {"created_at": "2026-01-01T00:00:00Z", "id": "x"}
    for bad in ("%%%", "bm90IGpzb24", encode_cursor({"a": 1})[:-3] + "!!", "WzEsMl0"):
        with pytest.raises(BadRequest):
            decode_cursor(bad)


async def test_keyset_pages_cover_every_row_once(db: Database) -> None:
    async with db.transaction() as work:
        tenancy = TenancyRepository(work.session)
        for i in range(23):
            await tenancy.create_organization(
                f"org-{i % 5}"
            )  # duplicate names: ties on the first key
    seen: list[str] = []
    last: list[object] | None = None
    while True:
        stmt = select(Organization).order_by(Organization.name, Organization.id).limit(4)
        if last is not None:
            stmt = stmt.where(keyset_after([Organization.name, Organization.id], last))
        async with db.transaction() as work:
            page = list((await work.session.execute(stmt)).scalars())
        if not page:
            break
        seen.extend(o.id for o in page)
        last = [page[-1].name, page[-1].id]
    assert len(seen) == len(set(seen)) == 23
    async with db.transaction() as work:
        desc = select(Organization).order_by(Organization.name.desc(), Organization.id.desc())
        rows = list((await work.session.execute(desc)).scalars())
        after = list(
            (
                await work.session.execute(
                    desc.where(
                        keyset_after(
                            [Organization.name, Organization.id],
                            [rows[4].name, rows[4].id],
                            descending=True,
                        )
                    )
                )
            ).scalars()
        )
    assert [o.id for o in after] == [o.id for o in rows[5:]]
