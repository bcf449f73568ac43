"""The code examples of the documentation, found and run (issue 39; the contract the pages keep is
"Examples are tested" in the docs' conventions):

- every ```python block of docs/**/*.md and README.md, and every ```sh / ```bash block whose
  commands are all `curl` (a command may go on over lines ending in `\\`; blank lines and `#`
  comments are allowed), in page order, each known by `<page>:<line of its fence>`
  (`guides/chat.md:42`, `README.md:27`);
- a block right after `<!-- docs-test: skip (reason) -->` is skipped with that reason; the marker
  without a reason, or one followed by no block the harness runs, is an error of that page.

A Python example runs in a process forked from `Runner`, a program that imported the newest 3.x
SDK once (an example costs a fork, not an interpreter and an SDK import: see `Runner`); a curl
example runs in bash, each `curl` with `--fail-with-body` (an HTTP error fails it) and `set -e`.
Both run in an empty directory of their own, with MISTRAL_API_KEY and MAESTRALE_ADMIN_KEY set and
`localhost:8000` in their text pointed at the live server (tests/docs/test_examples.py).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

PYTHON = "python"
CURL = "curl"
# The info string's first word → what runs the block. Nothing else is run.
LANGUAGES = {"python": PYTHON, "sh": CURL, "bash": CURL}
SKIP = re.compile(r"^\s*<!--\s*docs-test:\s*skip\b(?P<rest>.*?)-->\s*$")
REASON = re.compile(r"^\s*\((?P<reason>.*\S.*)\)\s*$")
MARKER = re.compile(r"<!--\s*docs-test\b")
FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^`]*?)\s*$")
CURL_COMMAND = re.compile(r"^curl(\s|$)")
# The address the examples are written for, replaced by the live server's.
DOCUMENTED_ADDRESS = "localhost:8000"


@dataclass(frozen=True)
class Example:
    page: str  # the page's path under the docs root (`guides/chat.md`), or `README.md`
    path: Path  # the page's file
    line: int  # the line of the opening fence, from 1
    kind: str  # PYTHON or CURL
    code: str  # the block's text, its fence's indentation removed
    skip: str | None = None  # the reason given in a skip marker
    problem: str | None = None  # what is wrong with the page's markup here (fails the test)

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"


def is_curl(code: str) -> bool:
    """Whether every command of a shell block is a `curl` (continuation lines joined, blank lines
    and comments left out); an empty block is not."""
    commands, current = [], ""
    for raw in code.splitlines():
        line = raw.strip()
        if not current and (not line or line.startswith("#")):
            continue
        if line.endswith("\\"):
            current += line[:-1] + " "
            continue
        commands.append(current + line)
        current = ""
    if current:
        commands.append(current)
    return bool(commands) and all(CURL_COMMAND.match(command) for command in commands)


def _dedent(lines: list[str], indent: str) -> str:
    """The block's lines without the fence's indentation (a line indented less loses what it
    has, as Markdown does)."""
    out = []
    for line in lines:
        cut = 0
        while cut < len(indent) and cut < len(line) and line[cut] in " \t":
            cut += 1
        out.append(line[cut:])
    return "\n".join(out) + "\n"


def extract(text: str, page: str, path: Path | None = None) -> list[Example]:
    """The runnable examples of one page's Markdown `text`, skipped ones and markup problems
    included (each at its line)."""
    where = path or Path(page)
    lines = text.splitlines()
    found: list[Example] = []
    # A skip marker waiting for its block: its line, its reason, what is wrong with it.
    pending: tuple[int, str | None, str | None] | None = None
    number = 0
    while number < len(lines):
        line = lines[number]
        number += 1
        marker = SKIP.match(line)
        if marker:
            if pending is not None:
                found.append(_dangling(pending, page, where))
            reason = REASON.match(marker["rest"])
            if reason:
                pending = (number, reason["reason"].strip(), None)
            else:
                pending = (number, None, "`docs-test: skip` needs a reason: `skip (why)`")
            continue
        if MARKER.search(line):
            found.append(
                Example(page, where, number, PYTHON, "", problem=f"unknown marker: {line.strip()}")
            )
            continue
        opening = FENCE.match(line)
        if opening is None:
            if line.strip() and pending is not None:
                found.append(_dangling(pending, page, where))
                pending = None
            continue
        fence, indent = opening["fence"], opening["indent"]
        info = opening["info"].strip().lstrip("{").lstrip(".").split()
        language = info[0].lower().rstrip("}") if info else ""
        start, body = number, []
        while number < len(lines):
            closing = lines[number].strip()
            number += 1
            if closing.startswith(fence[0] * len(fence)) and not closing.strip(fence[0]):
                break
            body.append(lines[number - 1])
        code = _dedent(body, indent)
        kind = LANGUAGES.get(language)
        if kind == CURL and not is_curl(code):
            kind = None
        if kind is None:
            if pending is not None:
                found.append(_dangling(pending, page, where))
                pending = None
            continue
        skip, problem = (pending[1], pending[2]) if pending is not None else (None, None)
        found.append(Example(page, where, start, kind, code, skip, problem))
        pending = None
    if pending is not None:
        found.append(_dangling(pending, page, where))
    return found


def _dangling(pending: tuple[int, str | None, str | None], page: str, where: Path) -> Example:
    line, _, problem = pending
    return Example(
        page,
        where,
        line,
        PYTHON,
        "",
        problem=problem or "`docs-test: skip` is not followed by a block the harness runs",
    )


def collect(docs_root: Path, readme: Path | None = None) -> list[Example]:
    """Every example of the pages under `docs_root` (sorted by path), then of `readme`."""
    found: list[Example] = []
    if docs_root.is_dir():
        for path in sorted(docs_root.rglob("*.md")):
            page = path.relative_to(docs_root).as_posix()
            found.extend(extract(path.read_text(encoding="utf-8"), page, path))
    if readme is not None and readme.is_file():
        found.extend(extract(readme.read_text(encoding="utf-8"), readme.name, readme))
    return found


def pointed_at(code: str, url: str) -> str:
    """`code` with the documented address replaced by the live server's `url`
    (`http://127.0.0.1:PORT`): `http://localhost:8000` and `ws://localhost:8000` alike."""
    return code.replace(DOCUMENTED_ADDRESS, url.split("://", 1)[-1])


@dataclass(frozen=True)
class Outcome:
    status: int  # the exit status, or minus the signal that ended it
    output: str  # stdout and stderr, interleaved
    seconds: float

    def report(self, example: Example) -> str:
        how = f"exit status {self.status}" if self.status > 0 else f"signal {-self.status}"
        return f"{example.id} ({example.kind}) failed with {how}:\n{self.output}"


CURL_PRELUDE = (
    "set -eo pipefail\n"
    'curl() { command curl --fail-with-body --show-error --max-time "$EXAMPLE_TIMEOUT" "$@"; }\n'
)


def run_curl(example: Example, url: str, cwd: Path, env: dict[str, str], timeout: float) -> Outcome:
    started = time.monotonic()
    code = CURL_PRELUDE + pointed_at(example.code, url)
    try:
        done = subprocess.run(
            ["bash", "-c", code, example.id],
            cwd=cwd,
            env={**env, "EXAMPLE_TIMEOUT": str(int(timeout))},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            timeout=timeout + 5,
        )
    except subprocess.TimeoutExpired as expired:
        output = (expired.output or b"").decode(errors="replace")
        return Outcome(-9, f"{output}\n[timed out after {timeout} s]", time.monotonic() - started)
    return Outcome(
        done.returncode, done.stdout.decode(errors="replace"), time.monotonic() - started
    )


class Runner:
    """A Python program (tests/docs/example_runner.py) that imported the SDK found first on
    `path`, forking a child per example: the child runs the example in a fresh `__main__` in its
    own directory, its stdout and stderr in a file, and the runner answers with its exit status
    and output. The fork makes an example as isolated as a process of its own (nothing it does to
    modules, the environment, the working directory or threads outlives it) for a few
    milliseconds, against ~1 s for a new interpreter importing the SDK."""

    PROGRAM = Path(__file__).with_name("example_runner.py")

    def __init__(
        self, path: list[str], env: dict[str, str], preload: tuple[str, ...] = ("mistralai.client",)
    ) -> None:
        self.path, self.env, self.preload = path, env, preload
        self._proc: subprocess.Popen[str] | None = None

    def _start(self) -> subprocess.Popen[str]:
        paths = [*self.path, self.env.get("PYTHONPATH", "")]
        proc = subprocess.Popen(
            [sys.executable, str(self.PROGRAM), *self.preload],
            env={**self.env, "PYTHONPATH": os.pathsep.join(p for p in paths if p)},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert proc.stdout is not None
        ready = proc.stdout.readline()
        if not ready:
            raise RuntimeError(f"the example runner did not start (exit {proc.wait()})")
        return proc

    def run(self, example: Example, url: str, cwd: Path, timeout: float) -> Outcome:
        if self._proc is None or self._proc.poll() is not None:
            self._proc = self._start()
        request = {
            "code": pointed_at(example.code, url),
            "filename": str(example.path),
            "line": example.line + 1,
            "cwd": str(cwd),
            "timeout": timeout,
        }
        proc = self._proc
        assert proc.stdin is not None and proc.stdout is not None
        try:
            proc.stdin.write(json.dumps(request) + "\n")
            proc.stdin.flush()
            answer = proc.stdout.readline()
        except BaseException:
            # Interrupted (the test's timeout): its answer must not be read as the next one's.
            self._proc = None
            proc.kill()
            proc.wait()
            raise
        if not answer:
            self._proc = None
            raise RuntimeError(f"the example runner ended while running {example.id}")
        return Outcome(**json.loads(answer))

    def close(self) -> None:
        if self._proc is not None:
            if self._proc.stdin is not None:
                self._proc.stdin.close()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
            self._proc = None
