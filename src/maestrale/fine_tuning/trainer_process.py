"""Running a trainer program (`training/`) as a subprocess of the worker and reading its reports.

The process gets a minimal environment (no secrets of the server: database URLs, keys), runs
offline (`HF_HUB_OFFLINE`), in a session of its own so that stopping it stops all of it, and
with its stdin held open: it exits when the worker dies (`protocol.die_with_parent`). Leaving
`run` in any way (a cancel, a lost lease, an error) kills it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from maestrale.core.jobs.worker import PermanentJobError
from maestrale.fine_tuning.training.protocol import DATA_ERROR_STATUS, TrainingSpec

KEPT_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "PYTHONPATH", "VIRTUAL_ENV")
OFFLINE_ENV = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "TOKENIZERS_PARALLELISM": "false",
    "PYTHONUNBUFFERED": "1",
}
STDERR_TAIL = 2000

OnEvent = Callable[[dict[str, Any]], Awaitable[None]]


class TrainerFailed(RuntimeError):
    """The trainer crashed (worth another attempt); the message ends with its stderr."""


def trainer_env(threads: int) -> dict[str, str]:
    env = {name: os.environ[name] for name in KEPT_ENV if name in os.environ}
    env.update(OFFLINE_ENV)
    env["OMP_NUM_THREADS"] = str(threads)
    return env


def _kill(process: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)


async def run(module: str, spec: TrainingSpec, on_event: OnEvent) -> dict[str, Any]:
    """Run `python -m <module>` on `spec`, awaiting `on_event` for every report; the `done`
    report. `PermanentJobError` for data the trainer refused, `TrainerFailed` for a crash."""
    work = Path(spec.work_dir)
    spec_path = work / "spec.json"
    spec_path.write_text(spec.to_json())
    stderr_path = work / "trainer.log"
    with stderr_path.open("wb") as stderr:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            module,
            str(spec_path),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=stderr,
            env=trainer_env(spec.threads),
            start_new_session=True,
        )
    done: dict[str, Any] | None = None
    refused: str | None = None
    try:
        assert process.stdout is not None
        async for line in process.stdout:
            try:
                event = json.loads(line)
            except ValueError:
                continue  # a library printing on stdout
            if not isinstance(event, dict):
                continue
            if event.get("event") == "done":
                done = event
            elif event.get("event") == "error":
                refused = str(event.get("message"))
            else:
                await on_event(event)
        status = await process.wait()
    finally:
        if process.returncode is None:
            _kill(process)
            with contextlib.suppress(ProcessLookupError):
                await process.wait()
    if status == DATA_ERROR_STATUS and refused is not None:
        raise PermanentJobError(refused)
    if status != 0 or done is None:
        tail = stderr_path.read_bytes()[-STDERR_TAIL:].decode("utf-8", "replace")
        raise TrainerFailed(f"the trainer exited with status {status}: {tail}")
    return done
