"""`--profile DIR`: py-spy of the Maestrale server during sequential execute-and-wait calls, and
where its CPU time goes (by step of the execute path, by package, by function)."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import sys
import time
from pathlib import Path

from bench.harness import Call, Result

RATE = 200  # samples per second
SESSION = ("Session.execute", "Session.flush", "Session.commit", "Session.refresh")
# Steps of `POST /v1/workflows/{name}/execute` with wait_for_result, by function (qualified
# names as py-spy prints them); a step's share is the samples with one of them on the stack.
STEPS = (
    ("whole request (uvicorn run_asgi)", ("RequestResponseCycle.run_asgi",)),
    ("  FastAPI route matching (_IncludedRouter._match)", ("_IncludedRouter._match",)),
    ("  auth + dependencies + body (solve_dependencies)", ("solve_dependencies",)),
    ("  ExecutionService.execute", ("ExecutionService.execute",)),
    ("    route (registry reads)", ("ExecutionService.route",)),
    ("    TemporalEngine.start", ("TemporalEngine.start",)),
    (
        "    ExecutionRepository.started (one upsert returning the row)",
        ("ExecutionRepository.started",),
    ),
    ("  UnitOfWork.commit (release and the route's)", ("UnitOfWork.commit",)),
    ("the wait (TemporalEngine._close_event, its own task)", ("TemporalEngine._close_event",)),
    # The async session runs the ORM in greenlets: py-spy shows those stacks on their own.
    ("SQLAlchemy ORM, any stack (greenlets included)", SESSION),
)


def find_py_spy() -> str | None:
    candidates = [shutil.which("py-spy"), str(Path(sys.executable).parent / "py-spy")]
    return next((c for c in candidates if c and Path(c).exists()), None)


async def profile_server(pid: int, call: Call, seconds: float, out: Path) -> list[str]:
    """py-spy record of `pid` while `call` runs in a loop for `seconds`: the summary lines."""
    py_spy = find_py_spy()
    if py_spy is None:
        return ["  --profile: py-spy not found (.venv/bin/pip install py-spy); skipped"]
    out.parent.mkdir(parents=True, exist_ok=True)
    cmd = [py_spy, "record", "--pid", str(pid), "--rate", str(RATE), "--gil", "--threads"]
    cmd += ["--duration", str(int(seconds)), "--format", "raw", "--output", str(out)]
    spy = await asyncio.to_thread(
        subprocess.Popen, cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    result = Result("profiled")
    try:
        await asyncio.sleep(0.5)
        started = time.perf_counter()
        i = 0
        while spy.poll() is None and time.perf_counter() - started < seconds + 20:
            await result.timed(call, i)
            i += 1
        result.seconds = time.perf_counter() - started
        await asyncio.to_thread(spy.wait, 30)
    finally:
        if spy.poll() is None:
            spy.kill()
            spy.wait()
    if not out.exists():
        err = (spy.stderr.read() if spy.stderr else b"").decode(errors="replace")[-300:]
        return [f"  --profile: py-spy wrote nothing (ptrace not permitted?) {err}"]
    head = (
        f"  {len(result.latencies)} execute-and-wait calls in {result.seconds:.1f} s, "
        f"p50 {result.pct(50):.2f} ms (py-spy attached); collapsed stacks: {out}"
    )
    return [head, *summarize(out.read_text(), len(result.latencies))]


def _frame(frame: str) -> tuple[str, str]:
    """'func (path/file.py:12)' -> ('func (path/file.py)', top-level package)."""
    name, _, where = frame.partition(" (")
    path = where.rsplit(":", 1)[0]
    return f"{name} ({path})", path.split("/", 1)[0].removesuffix(".py")


def summarize(collapsed: str, calls: int = 0, top: int = 15) -> list[str]:
    """Samples by step, self time by package and by function, inclusive time by function."""
    steps = [0] * len(STEPS)
    self_fn: dict[str, int] = {}
    incl_fn: dict[str, int] = {}
    self_pkg: dict[str, int] = {}
    samples = 0
    for line in collapsed.splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        frames = [f for f in stack.split(";") if not f.startswith(("thread ", "process "))]
        if not frames:
            continue
        samples += count
        parsed = [_frame(f) for f in frames]
        leaf, package = parsed[-1]
        self_fn[leaf] = self_fn.get(leaf, 0) + count
        self_pkg[package] = self_pkg.get(package, 0) + count
        names = {name for name, _ in parsed}
        for name in names:
            incl_fn[name] = incl_fn.get(name, 0) + count
        bare = {name.split(" (", 1)[0] for name in names}
        for k, (_, functions) in enumerate(STEPS):
            if not bare.isdisjoint(functions):
                steps[k] += count
    if not samples:
        return ["  (no samples)"]

    def share(n: int) -> str:
        return f"{n / samples * 100:5.1f}%"

    per_call = f" ({samples / RATE * 1000 / calls:.1f} ms per call)" if calls else ""
    out = [f"  {samples} samples of the thread holding the GIL{per_call}; by step of the call:"]
    out += [f"    {share(n)}  {label}" for (label, _), n in zip(STEPS, steps, strict=True)]
    out.append("  self time by package:")
    for pkg, n in sorted(self_pkg.items(), key=lambda kv: -kv[1])[:top]:
        out.append(f"    {share(n)}  {pkg}")
    out.append("  top self time by function:")
    for fn, n in sorted(self_fn.items(), key=lambda kv: -kv[1])[:top]:
        out.append(f"    {share(n)}  {fn}")
    out.append("  top inclusive time by function (below the event loop):")
    skip: tuple[str, ...] = (
        "Runner.run",
        "BaseEventLoop.run",
        "<module>",
        "run (uvicorn",
        "main (maestrale",
    )
    skip += ("Handle._run", "Thread.", "_bootstrap", "Server.", "_run_", "asyncio_run", "_serve")
    skip += ("run_server", "Runner.")
    ranked = [(fn, n) for fn, n in incl_fn.items() if not fn.startswith(skip)]
    for fn, n in sorted(ranked, key=lambda kv: -kv[1])[: top + 10]:
        out.append(f"    {share(n)}  {fn}")
    return out
