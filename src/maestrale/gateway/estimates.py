"""Token estimates made before a call, from characters: what the limits hooks reserve, and the
upper bounds of context-length checks (engines count exactly afterwards)."""

from __future__ import annotations

# A cheap upper-bound estimate of tokens from characters; English averages ~4 characters per
# token.
CHARS_PER_TOKEN = 4


def estimate_tokens(chars: int, max_tokens: int | None) -> int:
    """What the limits hook reserves: the prompt's tokens (estimated) plus max_tokens. Without
    max_tokens the completion is not reserved (reserving the whole context would refuse every
    call under a limit smaller than it): such calls can overshoot by what is in flight."""
    return chars // CHARS_PER_TOKEN + (max_tokens or 0)
