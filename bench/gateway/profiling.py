"""`--profile DIR`: py-spy of a Maestrale server under load, and where its time goes (by stage of
the request path, by package, by function)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

from bench.gateway.targets import LITELLM_VENV, Target
from bench.gateway.wrk import run_wrk


def profile_maestrale(target: Target, script: Path, seconds: float, out_dir: Path) -> None:
    """py-spy record of the Maestrale server under load (c=16), then where its time goes."""
    candidates = [shutil.which("py-spy"), Path(sys.executable).parent / "py-spy"]
    candidates.append(LITELLM_VENV / "bin" / "py-spy")
    py_spy = next((str(c) for c in candidates if c and Path(c).exists()), None)
    if py_spy is None:
        print(f"--profile: py-spy not found (e.g. {LITELLM_VENV}/bin/pip install py-spy); skipped")
        return
    out_dir.mkdir(parents=True, exist_ok=True)
    raw = out_dir / "maestrale.collapsed"  # flamegraph.pl / speedscope read this format
    cmd = [py_spy, "record", "--pid", str(target.proc.pid), "--rate", "250", "--gil"]
    cmd += ["--threads", "--duration", str(int(seconds) + 1), "--format", "raw"]
    spy = subprocess.Popen(
        [*cmd, "--output", str(raw)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        time.sleep(1)
        r = run_wrk(target, script, 16, seconds)
        spy.wait(timeout=seconds + 30)
    finally:
        if spy.poll() is None:
            spy.kill()
            spy.wait()
    if not raw.exists():
        print("--profile: py-spy wrote nothing (ptrace not permitted?)")
        return
    print(
        f"\nprofile of maestrale under load (c=16, {r.rate:.0f} req/s, "
        f"CPU {r.cpu_s / max(1, r.requests) * 1000:.2f} ms/req): {raw}"
    )
    for line in summarize_profile(raw.read_text()):
        print(line)


def _frame(frame: str) -> tuple[str, str]:
    """'func (path/file.py:12)' -> ('func (path/file.py)', package)."""
    name, _, where = frame.partition(" (")
    path = where.rsplit(":", 1)[0]
    return f"{name} ({path})", path.split("/", 1)[0].removesuffix(".py")


# Stages of the request path: (label, function names whose inclusive time is the stage's).
# Names that the code no longer has simply show 0 %.
STAGES = (
    ("whole ASGI request (uvicorn -> response sent)", ("RequestResponseCycle.run_asgi",)),
    ("  endpoint chat_completions (body parsed)", ("chat_completions",)),
    ("    auth (standard_principal)", ("standard_principal",)),
    ("    FastAPI dependencies + body validation", ("solve_dependencies",)),
    ("    Gateway.open + admit", ("Gateway.open", "Gateway.admit")),
    ("    engine call (UpstreamClient.post_json)", ("UpstreamClient.post_json",)),
    ("      of which httpx AsyncClient.send", ("AsyncClient.send",)),
    ("    accounting (Gateway.finish)", ("Gateway.finish",)),
    ("    response body (_json)", ("_json",)),
    ("  sending the response (uvicorn send)", ("RequestResponseCycle.send",)),
    ("background accounting flush (Recorder.flush)", ("Recorder.flush",)),
    ("accounting writer thread (SqliteWriter._transaction)", ("SqliteWriter._transaction",)),
    ("aiosqlite worker threads", ("_connection_worker_thread",)),
    ("garbage collection (py-spy shows it as <gc>?)", ("<gc>",)),
)


def summarize_profile(collapsed: str, top: int = 20) -> list[str]:
    """Self and inclusive time by function, self time by package, samples by thread."""
    stage_counts = [0] * len(STAGES)
    self_fn: dict[str, int] = {}
    incl_fn: dict[str, int] = {}
    self_pkg: dict[str, int] = {}
    threads: dict[str, int] = {}
    samples = 0
    for line in collapsed.splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        frames = stack.split(";")
        if frames[0].startswith("thread "):
            threads[frames[0]] = threads.get(frames[0], 0) + count
            frames = frames[1:]
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
        for i, (_, functions) in enumerate(STAGES):
            if not bare.isdisjoint(functions):
                stage_counts[i] += count
    if not samples:
        return ["  (no samples)"]

    def share(n: int) -> str:
        return f"{n / samples * 100:5.1f}%"

    out = [f"  {samples} samples (threads holding the GIL)", "  samples by thread:"]
    out += [f"    {share(n)}  {t}" for t, n in sorted(threads.items(), key=lambda kv: -kv[1])]
    out.append("  inclusive time by stage of the request path:")
    for (label, _), n in zip(STAGES, stage_counts, strict=True):
        out.append(f"    {share(n)}  {label}")
    out.append("  self time by package:")
    for pkg, n in sorted(self_pkg.items(), key=lambda kv: -kv[1])[:top]:
        out.append(f"    {share(n)}  {pkg}")
    out.append("  top self time by function:")
    for fn, n in sorted(self_fn.items(), key=lambda kv: -kv[1])[:top]:
        out.append(f"    {share(n)}  {fn}")
    out.append("  top inclusive time by function (below the event loop):")
    skip = ("Runner.run", "BaseEventLoop.run", "<module>", "run (uvicorn", "main (maestrale")
    ranked = [(fn, n) for fn, n in incl_fn.items() if not fn.startswith(skip)]
    for fn, n in sorted(ranked, key=lambda kv: -kv[1])[: top + 10]:
        out.append(f"    {share(n)}  {fn}")
    return out
