"""The `maestrale` command run in this process: `main(argv)` on a thread of its own (it starts its
own event loop), with what it prints and its exit code caught as a subprocess's would be. About
a second cheaper per command than a new interpreter; tests/core/test_cli.py keeps one run through
`python -m maestrale` for the entry point itself."""

from __future__ import annotations

import io
import logging
import subprocess
from concurrent.futures import ThreadPoolExecutor
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

from maestrale.cli import main


def run(*args: str, data_dir: Path) -> subprocess.CompletedProcess[str]:
    argv = [*args, "--data-dir", str(data_dir)]
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(_main, argv).result(timeout=60)


def _main(argv: list[str]) -> subprocess.CompletedProcess[str]:
    out, err = io.StringIO(), io.StringIO()
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level  # main() configures logging for its process
    try:
        with redirect_stdout(out), redirect_stderr(err):
            try:
                code = main(argv)
            except SystemExit as exit_:  # argparse's refusals
                code = exit_.code if isinstance(exit_.code, int) else int(exit_.code is not None)
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)
    return subprocess.CompletedProcess(["maestrale", *argv], code, out.getvalue(), err.getvalue())
