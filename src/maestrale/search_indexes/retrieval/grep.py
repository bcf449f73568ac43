"""The matchers of `grep`: `phrase` (the pattern literally, case-insensitive, whitespace
as typed), `term` (every whitespace-separated token of the pattern, in any order,
case-insensitive) and `regex` (RE2, whose time is linear in the text: no pattern backtracks).

A grep runs within the time budget of the observability search
(MAESTRALE_OBSERVABILITY_SEARCH_TIMEOUT): past it, the pattern is refused (400) rather than
let run over a huge source."""

from __future__ import annotations

import time
from collections.abc import Callable

from maestrale.core.regex import PatternError, compile_pattern
from maestrale.search_indexes.errors import InvalidRetriever

MAX_PATTERN_CHARS = 1000
MODES = ("phrase", "term", "regex")


class Matcher:
    """Whether a text holds the pattern, checked against the deadline at each call."""

    def __init__(self, test: Callable[[str], bool], budget: float) -> None:
        self._test = test
        self._budget = budget
        self._deadline = time.monotonic() + budget

    def search(self, text: str) -> bool:
        if time.monotonic() > self._deadline:
            raise InvalidRetriever(
                f"the pattern ran past the search's time budget of {self._budget:g} s: "
                "make it more specific",
                param="pattern",
            )
        return self._test(text)


def matcher(pattern: str, mode: str | None, budget: float) -> Matcher:
    """The matcher of a grep request (400 for an empty, overlong or invalid pattern)."""
    if not pattern.strip() or len(pattern) > MAX_PATTERN_CHARS:
        raise InvalidRetriever(
            f"the pattern must hold 1 to {MAX_PATTERN_CHARS} characters", param="pattern"
        )
    if mode in (None, "phrase"):
        needle = pattern.casefold()
        return Matcher(lambda text: needle in text.casefold(), budget)
    if mode == "term":
        tokens = [token.casefold() for token in pattern.split()]

        def every(text: str) -> bool:
            folded = text.casefold()
            return all(token in folded for token in tokens)

        return Matcher(every, budget)
    try:
        compiled = compile_pattern(pattern)
    except PatternError as exc:
        raise InvalidRetriever(f"invalid regular expression: {exc}", param="pattern") from None
    return Matcher(lambda text: compiled.search(text) is not None, budget)
