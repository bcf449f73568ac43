"""The releases of the official `mistralai` SDK the conformance tests speak with, side by side.

The venv's own SDK is 2.8.0 (the tests import it). The newest 2.x and the newest 3.x cannot share
that venv, so the Makefile installs each apart, into `.venv/mistralai-<version>`, and `SdkProcess`
runs one of them in its own interpreter with that folder first on its path (sdk_call.py).

To bump the newest 3.x (or 2.x): `python bench/sdk_diff.py 3.7.0 <new> --served` prints what
changed and what this server does not route yet; then change the version here and in the
Makefile (`SIDE_SDKS`), and run the conformance tests.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
OWN = "2.8.0"
NEWEST_2 = "2.10.1"
NEWEST_3 = "3.7.0"
VERSIONS = (OWN, NEWEST_2, NEWEST_3)
PROGRAM = Path(__file__).with_name("sdk_call.py")


def sdk_dir(version: str) -> Path | None:
    """Where `version` is installed apart; None for the venv's own."""
    return None if version == OWN else Path(sys.prefix) / f"mistralai-{version}"


@dataclass(frozen=True)
class SdkResult:
    type: str | None = None
    types: list[str] = field(default_factory=list)
    body: Any = None
    error: str | None = None
    status: int | None = None

    def ok(self) -> Any:
        """The body of a call that succeeded and parsed into the SDK's own models (none of the
        `Unknown*` classes the SDK falls back to when a discriminated answer does not fit)."""
        assert self.error is None, f"{self.error} {self.status}: {self.body}"
        unknown = [name for name in self.types if name.startswith("Unknown")]
        assert not unknown, f"the SDK could not parse {unknown} in {self.body}"
        return self.body


class SdkProcess:
    """One interpreter holding one release of the SDK, taking calls one at a time."""

    def __init__(self, version: str, url: str, key: str) -> None:
        self.version, self.url, self.key = version, url, key
        where = sdk_dir(version)
        if where is not None and not (where / "mistralai").is_dir():
            pytest.skip(f"mistralai {version} is not installed in {where}: run make")
        path = [str(where)] if where else []
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([*path, str(ROOT)])}
        self._proc = subprocess.Popen(
            [sys.executable, str(PROGRAM)],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self._lock = threading.Lock()
        banner = json.loads(self._read())
        assert banner["version"] == version, banner

    def _read(self) -> str:
        assert self._proc.stdout is not None
        line = self._proc.stdout.readline()
        assert line, f"the mistralai {self.version} process ended"
        return line

    def call(self, operation: str, *, key: str | None = None, **kwargs: Any) -> SdkResult:
        """Run `operation` (`beta.connectors.list`) with `kwargs`, as `key` (default: the
        fixture's); blocking: from async tests, use `await asyncio.to_thread(sdk.call, ...)`."""
        request = {"url": self.url, "key": key or self.key, "operation": operation}
        with self._lock:
            assert self._proc.stdin is not None
            self._proc.stdin.write(json.dumps({**request, "kwargs": kwargs}) + "\n")
            self._proc.stdin.flush()
            return SdkResult(**json.loads(self._read()))

    def close(self) -> None:
        if self._proc.stdin is not None:
            self._proc.stdin.close()
        self._proc.wait(timeout=30)
