"""Which pages to process: the request's `pages` (a list of indexes from 0, or a string such as
"0,2,4-6") checked against the document, and the page-count limit."""

from __future__ import annotations

from maestrale.core.errors import BadRequest, PayloadTooLarge


class InvalidPages(BadRequest):
    code = "invalid_pages"


def _parse(spec: str) -> list[int]:
    indexes: list[int] = []
    for part in spec.split(","):
        part = part.strip()
        if not part:
            continue
        first, sep, last = part.partition("-")
        if not first.strip().isdigit() or (sep and not last.strip().isdigit()):
            raise InvalidPages(
                f"pages: {part!r} is not a page index or a range such as 2-5", param="pages"
            )
        start = int(first)
        end = int(last) if sep else start
        if end < start:
            raise InvalidPages(f"pages: the range {part!r} is backwards", param="pages")
        indexes.extend(range(start, end + 1))
    return indexes


def select_pages(pages: list[int] | str | None, count: int, max_pages: int) -> list[int]:
    """The page indexes to process, in the order asked, each once; 400 for an index the document
    does not have, 413 when more than `max_pages` would be processed."""
    if pages is None:
        wanted = list(range(count))
    else:
        wanted = _parse(pages) if isinstance(pages, str) else list(pages)
        if not wanted:
            raise InvalidPages("pages: no page selected", param="pages")
        bad = [i for i in wanted if not 0 <= i < count]
        if bad:
            raise InvalidPages(
                f"pages: the document has {count} page(s) (indexes 0 to {count - 1}); "
                f"{bad[0]} is not one of them",
                param="pages",
            )
        wanted = list(dict.fromkeys(wanted))
    if len(wanted) > max_pages:
        raise PayloadTooLarge(
            f"{len(wanted)} pages to process, over the limit of {max_pages} per request; "
            "select fewer with `pages`",
            code="too_many_pages",
        )
    return wanted
