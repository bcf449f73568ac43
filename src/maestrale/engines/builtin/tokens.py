"""The builtin engine's deterministic tokenizer, and the limits (`max_tokens`, `stop`) built on it.

A token is a run of non-whitespace characters together with the whitespace before it; trailing
whitespace at the very end of a text is a token of its own. Concatenating the tokens of a text
gives back exactly that text, which is what lets a stream of one chunk per token reassemble into
the non-streamed content.
"""

from __future__ import annotations

import re

# The second alternative can only match at the end of the text: anywhere else the first one wins.
_TOKEN = re.compile(r"\s*\S+|\s+")


def tokenize(text: str) -> list[str]:
    """Split `text` into tokens whose concatenation is `text` itself."""
    return _TOKEN.findall(text)


def count_tokens(text: str) -> int:
    """Number of tokens in `text` (0 for an empty text)."""
    return len(tokenize(text))


def truncate(text: str, max_tokens: int | None) -> tuple[str, bool]:
    """Keep at most `max_tokens` tokens of `text`; also say whether anything was dropped."""
    if max_tokens is None:
        return text, False
    tokens = tokenize(text)
    if len(tokens) <= max_tokens:
        return text, False
    return "".join(tokens[: max(max_tokens, 0)]), True


def cut_at_stop(text: str, stop: list[str]) -> tuple[str, bool]:
    """Cut `text` before the earliest occurrence of any (non-empty) stop string."""
    positions = [pos for s in stop if s and (pos := text.find(s)) >= 0]
    if not positions:
        return text, False
    return text[: min(positions)], True


def apply_limits(text: str, max_tokens: int | None, stop: list[str]) -> tuple[str, str]:
    """Apply `stop` then `max_tokens` as a generating model would; return content and finish reason.

    Cutting at the stop string first is right in both orders of events: if the stop string comes
    after the token limit, the remaining text is still too long and the limit then applies.
    """
    text, _ = cut_at_stop(text, stop)
    text, truncated = truncate(text, max_tokens)
    return text, "length" if truncated else "stop"
