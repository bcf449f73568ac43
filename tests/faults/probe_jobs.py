"""A job module for the fault tests. Kind `probe.slow_record` appends `start <job> <owner>
<attempt>` to the file named in the payload, works `seconds` while heart-beating, and completes
with `{"owner", "attempt"}`; its `done <job> <owner>` line is written only by the completion's
effects, which run inside the completion transaction, i.e. only while the lease still holds.

(A file is not part of the database transaction: a process dying between the write and the
commit would leave a `done` line for an uncommitted completion. The tests kill workers while
they sleep, far from that window; real jobs write their effects to the database.)"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from maestrale.core.jobs.worker import JobContext, JobRegistry

KIND = "probe.slow_record"


def append_line(path: str, line: str) -> None:
    """Append one line and push it to disk, so a SIGKILL right after cannot lose it."""
    with open(path, "a", encoding="utf-8") as file:
        file.write(line + "\n")
        file.flush()
        os.fsync(file.fileno())


async def slow_record(ctx: JobContext) -> dict[str, Any]:
    """The probe handler (see the module docstring)."""
    path = str(ctx.payload["file"])
    append_line(path, f"start {ctx.job_id} {ctx.owner} {ctx.attempt}")
    loop = asyncio.get_running_loop()
    end = loop.time() + float(ctx.payload["seconds"])
    while (left := end - loop.time()) > 0:
        await asyncio.sleep(min(0.2, left))
        await ctx.heartbeat()

    async def effects(session: AsyncSession) -> None:
        append_line(path, f"done {ctx.job_id} {ctx.owner}")

    ctx.on_complete(effects)
    return {"owner": ctx.owner, "attempt": ctx.attempt}


def register(registry: JobRegistry) -> None:
    """Register the probe kind."""
    registry.register(KIND, slow_record)
