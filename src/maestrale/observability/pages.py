"""Numbered pages of the group's lists (1-based `page` and `page_size`): their next and previous
links."""

from __future__ import annotations

from maestrale.core.pagination import PageParams


def page_links(base: str, page: PageParams, count: int) -> tuple[str | None, str | None]:
    """The links to the next and previous pages of `base`, None past either end."""
    last = max(1, -(-count // page.page_size))
    nxt = f"{base}?page={page.page + 1}&page_size={page.page_size}" if page.page < last else None
    prev = f"{base}?page={page.page - 1}&page_size={page.page_size}" if page.page > 1 else None
    return nxt, prev
