"""What tests of the real local chat model (SmolLM2-135M) may assert on any build and CPU.

The exact text a 135M model samples differs between llama.cpp builds (issue 15): tests check
determinism within a run, log-probabilities (engine tests) and on-topic words, never the text.
"""

from __future__ import annotations

FRANCE = "What is the capital of France?"
# Every correct build's answer to FRANCE uses at least one of these words (case-insensitive).
FRANCE_WORDS = ("paris", "france", "french")


def on_topic(text: str, words: tuple[str, ...] = FRANCE_WORDS) -> bool:
    """Whether `text` uses one of `words` (lower-case), in any case."""
    lowered = text.lower()
    return any(word in lowered for word in words)
