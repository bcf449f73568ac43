"""Runs the Python examples of the docs, one at a time, each in a child forked from this process
(tests/docs/examples.py `Runner` starts it with the SDK to use first on its path).

It imports the packages named by its arguments once, each with every module in it (the SDK,
`mistralai.client`, imports its groups and models lazily, at their first use: ~1,700 modules that
every example would import again), says `ready`, then takes one JSON line per example on stdin:

    {"code": C, "filename": F, "line": L, "cwd": D, "timeout": T}

and forks: the child runs C as `__main__` (compiled as file F from line L, so a traceback names
the page and its line), in directory D, its stdout and stderr (file descriptors 1 and 2, so what
its own subprocesses print too) in a file, killed by SIGALRM after T seconds. The answer is one
line: `{"status": <exit status, or minus the signal>, "output": <what it printed>, "seconds": S}`.
"""

from __future__ import annotations

import atexit
import json
import os
import pkgutil
import signal
import sys
import tempfile
import time
import traceback
from importlib import import_module

MAX_OUTPUT = 20_000


def child(request: dict[str, object], output: int) -> int:
    """The example's exit status."""
    os.dup2(output, 1)
    os.dup2(output, 2)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    sys.stdin = open(0, closefd=False)  # noqa: SIM115 - the descriptor outlives it
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]
    os.chdir(str(request["cwd"]))
    signal.setitimer(signal.ITIMER_REAL, float(str(request["timeout"])))
    source = "\n" * (int(str(request["line"])) - 1) + str(request["code"])
    sys.argv = [str(request["filename"])]
    try:
        code = compile(source, str(request["filename"]), "exec")
        exec(code, {"__name__": "__main__", "__builtins__": __builtins__})
        status = 0
    except SystemExit as stop:
        status = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
        if not isinstance(stop.code, int) and stop.code is not None:
            sys.stderr.write(f"{stop.code}\n")
    except BaseException as error:
        # The example's frames only, not this program's.
        frames = error.__traceback__
        traceback.print_exception(error.with_traceback(frames.tb_next if frames else None))
        status = 1
    try:
        atexit._run_exitfuncs()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
    return status


def preload(name: str) -> None:
    """Import `name` and, if it is a package, every module in it (one that fails is named on
    stderr: the examples that use it fail the same way, with their traceback)."""
    package = import_module(name)
    for found in pkgutil.walk_packages(getattr(package, "__path__", []), f"{name}."):
        try:
            import_module(found.name)
        except Exception as error:
            sys.stderr.write(f"example_runner: cannot import {found.name}: {error!r}\n")


def main() -> None:
    for name in sys.argv[1:]:
        preload(name)
    answers = os.fdopen(os.dup(1), "w")
    # Nothing but answers goes to the pipe: this process's own prints go to stderr.
    os.dup2(2, 1)
    answers.write("ready\n")
    answers.flush()
    for line in sys.stdin:
        request = json.loads(line)
        started = time.monotonic()
        with tempfile.TemporaryFile() as output:
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:
                status = 1
                try:
                    answers.close()
                    status = child(request, output.fileno())
                finally:
                    os._exit(status if 0 <= status <= 255 else 1)
            _, wait_status = os.waitpid(pid, 0)
            output.seek(0)
            printed = output.read().decode(errors="replace")
        if len(printed) > MAX_OUTPUT:
            printed = printed[: MAX_OUTPUT // 2] + "\n[...]\n" + printed[-MAX_OUTPUT // 2 :]
        status = os.waitstatus_to_exitcode(wait_status)
        if status == -signal.SIGALRM:
            printed += f"\n[timed out after {request['timeout']} s]"
        answer = {"status": status, "output": printed, "seconds": time.monotonic() - started}
        answers.write(json.dumps(answer) + "\n")
        answers.flush()


if __name__ == "__main__":
    main()
