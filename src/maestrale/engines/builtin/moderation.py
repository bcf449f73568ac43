"""`EchoModerationEngine`: the deterministic moderation test double behind the
`maestrale-echo-moderation` model (no model is loaded).

Every one of the nine moderation categories scores 0.0, except those named by directive lines:
- `/flag CATEGORY [SCORE]` scores CATEGORY at SCORE (default 0.9; the largest of several lines
  wins); a category is flagged when its score is at least 0.5. An unknown category or a score
  outside [0, 1] leaves the line as ordinary text.
- `/moderation-fail STATUS` fails the call as an upstream would with STATUS (400-599). It is
  not the chat engine's `/fail`, so that a test can fail the moderation of a message that the
  echo chat model then answers.
"""

from __future__ import annotations

import math

from maestrale.engines.builtin.tokens import count_tokens
from maestrale.engines.moderation_types import (
    CATEGORIES,
    ModerationRequest,
    ModerationResult,
    ModerationVerdict,
)
from maestrale.engines.specs import ModelSpec
from maestrale.engines.types import EngineError, Usage

DEFAULT_SCORE = 0.9
FLAG_AT = 0.5


def _argument(line: str, word: str) -> str | None:
    """The text after the directive `word` if `line` is that directive, else None."""
    if not line.startswith(word):
        return None
    rest = line[len(word) :]
    return rest if not rest or rest[0].isspace() else None


def _flag(rest: str) -> tuple[str, float] | None:
    parts = rest.split()
    if not parts or len(parts) > 2 or parts[0] not in CATEGORIES:
        return None
    if len(parts) == 1:
        return parts[0], DEFAULT_SCORE
    try:
        score = float(parts[1])
    except ValueError:
        return None
    return (parts[0], score) if math.isfinite(score) and 0 <= score <= 1 else None


def _fail(rest: str) -> int | None:
    value = rest.strip()
    return int(value) if value.isdigit() and 400 <= int(value) <= 599 else None


def verdict(text: str) -> ModerationVerdict:
    """The verdict on one text (raises `EngineError` for a `/moderation-fail` line)."""
    scores = dict.fromkeys(CATEGORIES, 0.0)
    for line in text.splitlines():
        if (rest := _argument(line, "/flag")) is not None and (flag := _flag(rest)) is not None:
            scores[flag[0]] = max(scores[flag[0]], flag[1])
        elif (rest := _argument(line, "/moderation-fail")) is not None and (
            status := _fail(rest)
        ) is not None:
            raise EngineError(status, f"moderation failed with status {status} (as asked)")
    return ModerationVerdict(
        categories={name: score >= FLAG_AT for name, score in scores.items()},
        category_scores=scores,
    )


class EchoModerationEngine:
    async def moderate(self, request: ModerationRequest) -> ModerationResult:
        results = [verdict(text) for text in request.inputs]
        usage = Usage(prompt_tokens=sum(count_tokens(text) for text in request.inputs))
        return ModerationResult(results=results, usage=usage)


def create_engine(spec: ModelSpec) -> EchoModerationEngine:
    """Factory of the engine registry: one stateless engine serves every model of it."""
    return EchoModerationEngine()
