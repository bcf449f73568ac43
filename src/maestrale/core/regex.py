"""User-supplied regular expressions, run by RE2: its time is linear in the text whatever the
pattern, so no pattern can stall a search (Python's backtracking `re` took 40 s on `^(a+)+$`
over 30 characters, holding the GIL all along). What RE2 cannot do in linear time
(backreferences, lookaround) is refused when the pattern is checked."""

from __future__ import annotations

from collections.abc import Callable

import re2

# Compiled programs may use this much memory each (RE2 refuses larger ones).
MAX_PROGRAM_BYTES = 8 << 20
# Compiled patterns kept per SQLite connection.
CACHE_SIZE = 64


class PatternError(ValueError):
    """A pattern RE2 refuses, with RE2's reason."""


def _options() -> re2.Options:
    options = re2.Options()
    options.max_mem = MAX_PROGRAM_BYTES
    options.log_errors = False
    return options


def compile_pattern(pattern: str) -> re2._Regexp:
    try:
        return re2.compile(pattern, _options())
    except re2.error as exc:
        reason = exc.args[0] if exc.args else exc
        if isinstance(reason, bytes):
            reason = reason.decode("utf-8", "replace")
        raise PatternError(str(reason)) from None


def check_pattern(pattern: str) -> None:
    """Raise PatternError when RE2 cannot run the pattern."""
    compile_pattern(pattern)


def sqlite_regexp() -> Callable[[str | None, object], bool | None]:
    """The REGEXP function of one SQLite connection (`x REGEXP p` calls regexp(p, x)), with its
    own small cache of compiled patterns; NULL text or a non-text value is NULL."""
    cache: dict[str, re2._Regexp] = {}

    def regexp(pattern: str | None, value: object) -> bool | None:
        if pattern is None or not isinstance(value, str):
            return None
        compiled = cache.get(pattern)
        if compiled is None:
            if len(cache) >= CACHE_SIZE:
                cache.clear()
            # Patterns are checked before any query; one RE2 refuses here is an SQL error.
            compiled = cache[pattern] = compile_pattern(pattern)
        return compiled.search(value) is not None

    return regexp
