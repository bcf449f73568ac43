"""Dataset slugs (`Dataset.slug`, required in 3.x): a dataset's name made a URL-safe key, unique
in its workspace and kept for its life (a rename keeps it, as an identifier should). A name
whose slug is taken gets the first free `-2`, `-3`, ... suffix."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Collection

MAX_LENGTH = 100
_NOT_SLUG = re.compile(r"[^a-z0-9]+")


def slug_of(name: str) -> str:
    """`Customer support: Q3!` → `customer-support-q3`; a name with no letter or digit gives
    `dataset`."""
    ascii_name = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode()
    slug = _NOT_SLUG.sub("-", ascii_name.lower()).strip("-")[:MAX_LENGTH].rstrip("-")
    return slug or "dataset"


def free_slug(base: str, taken: Collection[str]) -> str:
    """`base`, or `base-N` with the smallest N ≥ 2 not in `taken`."""
    if base not in taken:
        return base
    n = 2
    while f"{base}-{n}" in taken:
        n += 1
    return f"{base}-{n}"
