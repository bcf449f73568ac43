"""A failure that repeats at every tick of a background loop (the accounting writer, the job
worker's claims) while the database is down: logged once with its traceback, then one line every
`every` seconds, and its end once, instead of a traceback four times a second."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable


class RepeatedFailure:
    def __init__(
        self,
        logger: logging.Logger,
        what: str,
        every: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.logger = logger
        self.clock = clock
        self.what = what
        self.every = every
        self.since: float | None = None
        self.last = 0.0
        self.count = 0

    def failed(self, exc: BaseException) -> None:
        now = self.clock()
        self.count += 1
        if self.since is None:
            self.since = self.last = now
            self.logger.error("%s", self.what, exc_info=exc)
        elif now - self.last >= self.every:
            self.last = now
            self.logger.error(
                "%s: still failing after %.0f s (%d times): %s: %s",
                self.what,
                now - self.since,
                self.count,
                type(exc).__name__,
                str(exc).splitlines()[0][:200] if str(exc) else "",
            )

    def succeeded(self) -> None:
        if self.since is not None:
            self.logger.warning(
                "%s: recovered after %.1f s (%d failures)",
                self.what,
                self.clock() - self.since,
                self.count,
            )
            self.since, self.count = None, 0
