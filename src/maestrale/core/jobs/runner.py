"""Running workers: the entry point `maestrale worker` and `maestrale serve` call, and the loader
of job modules (`--import MOD`)."""

from __future__ import annotations

import asyncio
import importlib
import logging
import os
import secrets
import socket

from maestrale.core.db import Database
from maestrale.core.jobs.worker import JobRegistry, Wakeup, Worker

logger = logging.getLogger("maestrale.jobs")


class JobModuleError(RuntimeError):
    """A job module named on the command line cannot be used."""


def default_owner() -> str:
    """`host:pid:random`: names the lease holder in the jobs table, unique per process start."""
    return f"{socket.gethostname()[:150]}:{os.getpid()}:{secrets.token_hex(4)}"


def load_job_modules(registry: JobRegistry, modules: list[str]) -> None:
    """Import each dotted module name and call its `register(registry)`."""
    for name in modules:
        try:
            module = importlib.import_module(name)
        except ImportError as exc:
            raise JobModuleError(f"cannot import job module {name!r}: {exc}") from exc
        register = getattr(module, "register", None)
        if not callable(register):
            raise JobModuleError(
                f"job module {name!r} has no register(registry: JobRegistry) -> None function"
            )
        register(registry)


async def run_worker(
    db: Database,
    registry: JobRegistry,
    *,
    owner: str | None = None,
    concurrency: int,
    lease_seconds: float,
    poll_seconds: float,
    stop: asyncio.Event,
    grace_seconds: float = 10.0,
    per_workspace: int | None = None,
    wakeup: Wakeup | None = None,
) -> None:
    """Run one worker until `stop` is set, then shut it down gracefully: running jobs get
    `grace_seconds` to finish, then are handed back to the queue for another worker. A workspace
    runs at most `per_workspace` jobs at once on all workers (None: no bound)."""
    owner = owner or default_owner()
    if not registry.kinds:
        logger.warning("worker %s has no job kinds registered: it will claim nothing", owner)
    kinds = sorted(registry.kinds)
    logger.info(
        "worker %s started: kinds=%s concurrency=%d lease=%ss",
        owner,
        kinds,
        concurrency,
        lease_seconds,
    )
    worker = Worker(
        db,
        registry,
        owner=owner,
        concurrency=concurrency,
        lease_seconds=lease_seconds,
        poll_seconds=poll_seconds,
        grace_seconds=grace_seconds,
        per_workspace=per_workspace,
        wakeup=wakeup,
    )
    await worker.run(stop)
    logger.info("worker %s stopped", owner)
