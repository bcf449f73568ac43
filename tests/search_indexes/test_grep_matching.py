"""grep's matchers past their time budget: the pattern is refused (400), not left running."""

from __future__ import annotations

import pytest

from maestrale.search_indexes.errors import InvalidRetriever
from maestrale.search_indexes.retrieval.grep import matcher


def test_a_grep_past_its_budget_is_refused() -> None:
    assert matcher("b+", "regex", 60).search("abc")
    spent = matcher("b+", "regex", 0)
    with pytest.raises(InvalidRetriever, match="time budget"):
        spent.search("abc")
