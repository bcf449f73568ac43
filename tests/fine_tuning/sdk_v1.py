"""Calls of the official `mistralai==1.12.4` SDK from the tests, each in a subprocess that finds
that SDK first on its path: the Makefile installs it apart, into `.venv/mistralai-1.12.4`,
because the venv's own mistralai is 2.8.0 (which has no fine-tuning jobs)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
SDK_DIR = Path(sys.prefix) / "mistralai-1.12.4"
PROGRAM = Path(__file__).with_name("sdk_v1_call.py")


def require_sdk() -> None:
    """Skip (with how to fix it) where `make` has not installed the 1.12.4 SDK."""
    if not (SDK_DIR / "mistralai").is_dir():
        pytest.skip(f"mistralai 1.12.4 is not installed in {SDK_DIR}: run make")


async def call(url: str, key: str, operation: str, **kwargs: Any) -> dict[str, Any]:
    """Run `operation` (e.g. `fine_tuning.jobs.get`) with `kwargs`; the printed result."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SDK_DIR), str(ROOT)])}

    def run() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, str(PROGRAM), url, key, operation, json.dumps(kwargs)],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    done = await asyncio.to_thread(run)
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result
