"""A stand-in for the JobContext a job's task gets, to run a task directly in a test (as the
worker would, on attempt `attempt` of `max_attempts`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from maestrale.core.db import Database


@dataclass
class JobCtx:
    db: Database
    payload: dict[str, Any]
    attempt: int = 1
    max_attempts: int = 5
    job_id: str = "test-job"
    effects: list[Any] = field(default_factory=list)

    def check(self) -> None:
        return None

    def on_complete(self, effects: Any) -> None:
        self.effects.append(effects)
