"""What a job will cost before it runs: the dry run's figures and every job's `metadata`.

The trainer takes `BATCH_EXAMPLES` examples per optimizer step, so a step trains on about that
many examples' tokens; the cost comes from the catalog's training price. The duration is a
start-up (the trainer's process and model loading) plus the training tokens at a speed, both
measured on the workspace's last jobs of the same base that succeeded in one attempt (`Speed`):
from their events, STARTED to RUNNING is the start-up and RUNNING to SUCCESS the training of
their estimated tokens (checkpoints and the model's writing included), so estimate and
measure count the same tokens. Before any such job, the settings' speed and `STARTUP_SECONDS`.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import cast

from maestrale.engines.registry import EngineRegistry
from maestrale.engines.specs import ModelSpec
from maestrale.gateway.estimates import CHARS_PER_TOKEN

# The tokens of the given texts (the training examples' text).
TokenCounter = Callable[[list[str]], Awaitable[int]]

BATCH_EXAMPLES = 8
# The start-up of a job before its first job measured it (SmolLM2 on 2 cores: 15-20 s).
STARTUP_SECONDS = 20.0
# How many of the last finished jobs the speed is measured on.
SPEED_SAMPLES = 5
DEFAULT_EPOCHS = {"completion": 3.0, "classifier": 100.0}
MAX_TRAINING_STEPS = 100_000


async def estimate_tokens(texts: list[str]) -> int:
    """The default counter: characters / 4, plus one per text (no tokenizer needed)."""
    return sum(len(text) // CHARS_PER_TOKEN + 1 for text in texts)


@dataclass(frozen=True, slots=True)
class Plan:
    """How long the training runs: `epochs` (given or implied) and `training_steps`."""

    epochs: float
    training_steps: int
    epochs_given: bool


def plan_steps(
    job_type: str, examples: int, epochs: float | None, training_steps: int | None
) -> Plan:
    """`training_steps` as given, or `ceil(epochs * examples / BATCH_EXAMPLES)` (default epochs
    by job type); the epochs the steps amount to. `examples` is at least 1."""
    per_step = min(BATCH_EXAMPLES, examples)
    if training_steps is not None:
        return Plan(training_steps * per_step / examples, training_steps, False)
    given = epochs is not None
    wanted = epochs if epochs is not None else DEFAULT_EPOCHS[job_type]
    return Plan(wanted, max(1, math.ceil(wanted * examples / per_step)), given)


@dataclass(frozen=True, slots=True)
class Sample:
    """One finished job: its estimated training tokens, its start-up and training seconds."""

    train_tokens: int
    startup_seconds: float
    training_seconds: float


@dataclass(frozen=True, slots=True)
class Speed:
    """How fast jobs of a base train here: `jobs` is how many finished jobs it was measured on
    (0: the defaults)."""

    tokens_per_second: float
    startup_seconds: float
    jobs: int = 0

    @classmethod
    def measured(cls, samples: list[Sample], default: Speed) -> Speed:
        """The speed of `samples` (all their tokens over all their training time, their mean
        start-up), or `default` when there are none to go by."""
        usable = [s for s in samples if s.train_tokens > 0 and s.training_seconds > 0]
        if not usable:
            return default
        tokens = sum(s.train_tokens for s in usable)
        seconds = sum(s.training_seconds for s in usable)
        startup = sum(max(s.startup_seconds, 0.0) for s in usable) / len(usable)
        return cls(tokens / seconds, startup, len(usable))

    def seconds(self, train_tokens: int) -> int:
        return math.ceil(self.startup_seconds + train_tokens / self.tokens_per_second)

    def describe(self) -> str:
        source = (
            f"measured on the last {self.jobs} finished job(s) of this base model"
            if self.jobs
            else "the default until a job of this base model finishes here"
        )
        return (
            f"expected duration: {self.startup_seconds:.0f} s to start, then "
            f"{self.tokens_per_second:.1f} training tokens per second ({source})."
        )


@dataclass(frozen=True, slots=True)
class Estimate:
    data_tokens: int
    train_tokens_per_step: int
    train_tokens: int
    expected_duration_seconds: int
    cost: float
    cost_currency: str

    def metadata(self, estimated_start_time: int | None) -> dict[str, int | float | str | None]:
        """The JobMetadataOut fields."""
        return {
            "expected_duration_seconds": self.expected_duration_seconds,
            "cost": self.cost,
            "cost_currency": self.cost_currency,
            "train_tokens_per_step": self.train_tokens_per_step,
            "train_tokens": self.train_tokens,
            "data_tokens": self.data_tokens,
            "estimated_start_time": estimated_start_time,
        }


def estimate(
    *,
    examples: int,
    data_tokens: int,
    steps: int,
    speed: Speed,
    price_per_million: float,
    currency: str,
) -> Estimate:
    per_step = math.ceil(data_tokens / examples * min(BATCH_EXAMPLES, examples))
    train_tokens = steps * per_step
    return Estimate(
        data_tokens=data_tokens,
        train_tokens_per_step=per_step,
        train_tokens=train_tokens,
        expected_duration_seconds=speed.seconds(train_tokens),
        cost=round(train_tokens / 1e6 * price_per_million, 6),
        cost_currency=currency,
    )


def registry_counter(registry: EngineRegistry) -> Callable[[ModelSpec], TokenCounter]:
    """The token counter of a base model: its engine's own tokenizer when it has one
    (`count_tokens`, the llama.cpp engine), else the estimate."""

    def counter(spec: ModelSpec) -> TokenCounter:
        resolved = registry.resolve(spec.id)
        count = getattr(resolved.engine, "count_tokens", None) if resolved else None
        return cast(TokenCounter, count) if callable(count) else estimate_tokens

    return counter
