"""Gateway benchmark: chat completions through Maestrale vs LiteLLM vs the upstream directly.

One run starts an instant OpenAI-compatible stub upstream, `maestrale serve --no-worker` with a
catalog routing `stub-model` to it (engine `openai_compat`), and LiteLLM's proxy (its own venv,
one worker, no database) routing the same model to the same stub. For each target it measures:

* concurrency 1: N sequential requests after a warm-up, in interleaved rounds (direct, Maestrale,
  LiteLLM, direct, ...) so that noise from the rest of the machine hits all targets alike →
  p50/p99, and the latency ADDED to the direct call at the same percentile;
* under load: closed-loop steps at concurrency 1, 2, 4, ... with a fixed duration per step →
  throughput and p50/p99 of each step; the highest throughput of a step whose p99 < 50 ms and
  that had no errors is the "max rate";
* the server's CPU time per request (utime + stime from /proc, summed over its process tree);
* the overhead the gateway reports itself (`x-maestrale-overhead-ms`,
  `x-litellm-overhead-duration-ms`), median over the concurrency-1 requests.

The load generator is wrk (C, epoll; POST bodies through a Lua script): `apt-get install -y wrk`.
With two CPUs or more the gateway under test is pinned to the first CPU and the stub, wrk and this
script to the others, so each gateway gets one core (LiteLLM and Maestrale both run one process).

    .venv/bin/python -m bench.gateway.run [--quick] [--requests N] [--step-seconds S]
        [--targets direct,maestrale,litellm] [--no-pin] [--json FILE] [--profile DIR]
        [--maestrale-src DIR] [--setup-only]

See bench/gateway/README.md for what each figure means and why wrk.

The first run creates LiteLLM's venv (bench/gateway/.venv-litellm, `pip install 'litellm[proxy]'`,
a few minutes), outside the time budget of the benchmark itself.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
LITELLM_VENV = HERE / ".venv-litellm"
LITELLM_MASTER_KEY = "sk-bench-litellm-master-key"
MAESTRALE_KEY = "msk_bench_gateway_key_0123456789abcdefghijklmnopqrs"  # bootstrap API key
MODEL = "stub-model"
BODY = json.dumps(
    {
        "model": MODEL,
        "messages": [{"role": "user", "content": "Hello"}],
        "max_tokens": 16,
    },
    separators=(",", ":"),
)
EXPECTED_CONTENT = "Hello from the stub."  # what stub_upstream answers
OVERHEAD_HEADERS = ("x-maestrale-overhead-ms", "x-litellm-overhead-duration-ms")
P99_LIMIT_MS = 50.0
TARGET_ADDED_P50_MS = 1.0
TARGET_ADDED_P99_MS = 5.0
TARGET_RATE_RATIO = 5.0
CLK_TCK = os.sysconf("SC_CLK_TCK")
COARSE_TICKS = 20  # CPU figures from fewer ticks than this are marked as imprecise


@dataclass(frozen=True)
class Profile:
    requests: int  # concurrency-1 requests per target, split over `rounds`
    rounds: int
    warmup_seconds: float
    step_seconds: float
    max_concurrency: int
    budget_seconds: float  # the whole measurement (start-up included, venv creation excluded)


FULL = Profile(
    requests=2000,
    rounds=5,
    warmup_seconds=3,
    step_seconds=5,
    max_concurrency=256,
    budget_seconds=540,
)
QUICK = Profile(
    requests=400,
    rounds=2,
    warmup_seconds=1.5,
    step_seconds=2,
    max_concurrency=128,
    budget_seconds=110,
)


class BenchError(Exception):
    """A clear, expected failure (missing tool, target that does not start)."""


# --------------------------------------------------------------------------- processes


@dataclass
class Target:
    name: str
    url: str  # the chat completions URL
    headers: dict[str, str]
    proc: subprocess.Popen[bytes]
    own_group: bool = False  # started in its own session: signal the whole group
    version: str = ""


@dataclass
class Processes:
    """Every process this run started, stopped in reverse order whatever happens."""

    started: list[tuple[subprocess.Popen[bytes], str]] = field(default_factory=list)

    def add(self, proc: subprocess.Popen[bytes], how: str) -> None:
        self.started.append((proc, how))

    def stop_all(self) -> None:
        for proc, how in reversed(self.started):
            with contextlib.suppress(Exception):
                _stop(proc, how)
        self.started.clear()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _stop(proc: subprocess.Popen[bytes], how: str) -> None:
    if proc.poll() is None:
        if how == "group":
            os.killpg(proc.pid, signal.SIGTERM)
        else:
            proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            if how == "group":
                os.killpg(proc.pid, signal.SIGKILL)
            else:
                proc.kill()
            proc.wait()
    elif how == "group":
        with contextlib.suppress(ProcessLookupError):  # children left behind by the leader
            os.killpg(proc.pid, signal.SIGKILL)


@contextlib.contextmanager
def _affinity(cpus: set[int] | None) -> Iterator[None]:
    """Children started inside inherit `cpus`; this process gets its own CPUs back after."""
    if cpus is None:
        yield
        return
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, cpus)
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


def _wait_http(
    url: str, proc: subprocess.Popen[bytes], what: str, log: Path, timeout: float
) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            tail = log.read_text(errors="replace")[-3000:] if log.exists() else ""
            raise BenchError(f"{what} exited with {proc.returncode}:\n{tail}")
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(url, timeout=1).status_code == 200:
                return
        time.sleep(0.2)
    raise BenchError(f"{what} did not answer {url} within {timeout:.0f} s (log: {log})")


def start_stub(tmp: Path, procs: Processes) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    log = tmp / "stub.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "bench.gateway.stub_upstream", "--port", str(port)],
            cwd=REPO,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    procs.add(proc, "plain")
    _wait_http(f"http://127.0.0.1:{port}/health", proc, "stub upstream", log, 30)
    return proc, port


def start_direct(stub: subprocess.Popen[bytes], stub_port: int) -> Target:
    """The stub itself: the baseline of the added latency."""
    return Target("direct", f"http://127.0.0.1:{stub_port}/v1/chat/completions", {}, stub)


def start_maestrale(
    tmp: Path, stub_port: int, procs: Processes, cpus: set[int] | None, src: Path | None
) -> Target:
    """`maestrale serve --no-worker` with `stub-model` on the openai_compat engine (started as
    tests/support/live.py does, without importing the server into this process)."""
    catalog = tmp / "models.toml"
    catalog.write_text(
        "[[models]]\n"
        f'id = "{MODEL}"\n'
        'engine = "openai_compat"\n'
        f'base_url = "http://127.0.0.1:{stub_port}/v1"\n'
        'upstream_model = "stub"\n'
        'capabilities = ["completion_chat"]\n'
    )
    data = tmp / "maestrale" / "data"
    data.mkdir(parents=True)
    port = free_port()
    log = tmp / "maestrale.log"
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("MAESTRALE_")  # the bench decides the server's settings
    }
    env.update(
        {
            "MAESTRALE_LOG_LEVEL": "WARNING",
            "MAESTRALE_BOOTSTRAP_API_KEY": MAESTRALE_KEY,
            "PYTHONUNBUFFERED": "1",
        }
    )
    if src is not None:  # another checkout's server code, e.g. to compare two versions
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(src.resolve()), env.get("PYTHONPATH", "")) if p
        )
    cmd = [sys.executable, "-m", "maestrale", "serve", "--port", str(port)]
    cmd += ["--data-dir", str(data), "--no-worker", "--models", str(catalog)]
    with _affinity(cpus), open(log, "wb") as out:
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT)
    procs.add(proc, "plain")
    _wait_http(f"http://127.0.0.1:{port}/health", proc, "maestrale serve", log, 60)
    return Target(
        "maestrale",
        f"http://127.0.0.1:{port}/v1/chat/completions",
        {"Authorization": f"Bearer {MAESTRALE_KEY}"},
        proc,
    )


def ensure_litellm_venv() -> Path:
    """LiteLLM's own venv (created once, outside the benchmark's time budget)."""
    litellm = LITELLM_VENV / "bin" / "litellm"
    if litellm.exists():
        return litellm
    print(f"creating {LITELLM_VENV} and installing 'litellm[proxy]' (first run only) ...")
    python3 = shutil.which("python3") or sys.executable
    subprocess.run([python3, "-m", "venv", str(LITELLM_VENV)], check=True)
    pip = LITELLM_VENV / "bin" / "pip"
    result = subprocess.run(
        [str(pip), "install", "--quiet", "litellm[proxy]"], timeout=1800, check=False
    )
    if result.returncode != 0 or not litellm.exists():
        raise BenchError(
            f"could not install litellm[proxy] into {LITELLM_VENV} (pip exit {result.returncode})"
        )
    return litellm


def litellm_config(stub_port: int) -> str:
    """One model routed to the stub, a master key, no database, minimal logging."""
    return (
        "model_list:\n"
        f"  - model_name: {MODEL}\n"
        "    litellm_params:\n"
        "      model: openai/stub\n"
        f"      api_base: http://127.0.0.1:{stub_port}/v1\n"
        "      api_key: sk-stub-upstream\n"
        "litellm_settings:\n"
        "  set_verbose: false\n"
        "  json_logs: false\n"
        "general_settings:\n"
        f"  master_key: {LITELLM_MASTER_KEY}\n"
    )


def start_litellm(tmp: Path, stub_port: int, procs: Processes, cpus: set[int] | None) -> Target:
    litellm = ensure_litellm_venv()
    config = tmp / "litellm_config.yaml"
    config.write_text(litellm_config(stub_port))
    port = free_port()
    log = tmp / "litellm.log"
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("DATABASE_URL", "REDIS_", "LITELLM_", "OPENAI_"))
    }
    env.update(
        {
            # no internet: the bundled model price map, no telemetry, no update checks
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            "LITELLM_TELEMETRY_DISABLED": "true",
            "LITELLM_LOG": "ERROR",
            "PYTHONUNBUFFERED": "1",
        }
    )
    cmd = [
        str(litellm),
        "--config",
        str(config),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--num_workers",
        "1",
    ]
    with _affinity(cpus), open(log, "wb") as out:
        proc = subprocess.Popen(
            cmd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    procs.add(proc, "group")
    _wait_http(f"http://127.0.0.1:{port}/health/liveliness", proc, "litellm", log, 120)
    version = subprocess.run(
        [
            str(LITELLM_VENV / "bin" / "python"),
            "-c",
            "import importlib.metadata as m; print(m.version('litellm'))",
        ],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    return Target(
        "litellm",
        f"http://127.0.0.1:{port}/v1/chat/completions",
        {"Authorization": f"Bearer {LITELLM_MASTER_KEY}"},
        proc,
        own_group=True,
        version=version,
    )


def check_target(target: Target) -> None:
    """One real request: the target must answer the stub's completion, or it is not measured."""
    last = ""
    for _ in range(3):
        try:
            resp = httpx.post(
                target.url,
                content=BODY,
                headers={**target.headers, "Content-Type": "application/json"},
                timeout=30,
            )
        except httpx.HTTPError as exc:
            last = repr(exc)
            time.sleep(1)
            continue
        if resp.status_code == 200:
            try:
                content = resp.json()["choices"][0]["message"]["content"]
            except (ValueError, KeyError, IndexError, TypeError):
                content = None
            if content == EXPECTED_CONTENT:
                return
        last = f"HTTP {resp.status_code}: {resp.text[:500]}"
        time.sleep(1)
    raise BenchError(f"{target.name} does not answer a chat completion for {MODEL}: {last}")


# --------------------------------------------------------------------------- /proc


def process_tree(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry.name))
    tree, todo = [], [pid]
    while todo:
        p = todo.pop()
        tree.append(p)
        todo.extend(children.get(p, []))
    return tree


def cpu_seconds(pids: list[int]) -> float:
    ticks = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        ticks += int(fields[11]) + int(fields[12])  # utime + stime
    return ticks / CLK_TCK


def rss_mb(pids: list[int]) -> float:
    total_kb = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total_kb += int(line.split()[1])
        except OSError:
            continue
    return total_kb / 1024


def busy_cpu_seconds() -> float:
    """CPU time all processes of the machine used so far (from /proc/stat)."""
    fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(x) for x in fields[:8])
    return (user + nice + system + irq + softirq + steal) / CLK_TCK


def children_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


# --------------------------------------------------------------------------- wrk

_LUA_COMMON = """
wrk.method = "POST"
wrk.body = [==[{body}]==]
wrk.headers["Content-Type"] = "application/json"
{auth}
local threads = {{}}
function setup(thread) table.insert(threads, thread) end
"""

_LUA_DONE = """
function done(summary, latency, requests)
  local e = summary.errors
  local extra = ""
  if want_hist then
    local h, oh = {}, {}
    for i = 1, #latency do
      local v, c = latency(i)
      h[#h + 1] = string.format("[%d,%d]", v, c)
    end
    for _, t in ipairs(threads) do
      local o = t:get("overheads")
      if o then for _, v in ipairs(o) do oh[#oh + 1] = v end end
    end
    extra = string.format(',"hist":[%s],"overheads":[%s]',
      table.concat(h, ","), table.concat(oh, ","))
  end
  io.write(string.format(
    'BENCHJSON {"requests":%d,"duration_us":%d,"errors":{"connect":%d,"read":%d,' ..
    '"write":%d,"status":%d,"timeout":%d},"p50":%d,"p90":%d,"p99":%d,"max":%d%s}\\n',
    summary.requests, summary.duration, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max, extra))
  io.stdout:flush()
end
"""

# Concurrency 1, stopped after `limit` responses: keeps the full latency histogram (1 µs
# buckets) so that rounds can be merged, and the self-reported overhead headers.
_LUA_SEQUENTIAL = """
want_hist = true
local limit, n = 0, 0
overheads = {{}}
function init(args) limit = tonumber(args[1]) end
function response(status, headers, body)
  n = n + 1
  for k, v in pairs(headers) do
    local lk = string.lower(k)
    if lk == "{h1}" or lk == "{h2}" then
      local x = tonumber(v)
      if x then overheads[#overheads + 1] = string.format("%.4f", x) end
    end
  end
  if n == limit then
    wrk.thread:stop()
    io.write("BENCH_LIMIT_REACHED\\n")
    io.stdout:flush()
  end
end
"""

# Load steps: no response() hook (it would cost wrk a Lua call and a header table per response).
_LUA_LOAD = """
want_hist = false
"""


@dataclass
class WrkResult:
    requests: int
    seconds: float
    errors: dict[str, int]
    p50_ms: float
    p99_ms: float
    max_ms: float
    cpu_s: float  # the target's CPU time during the run
    hist: list[tuple[int, int]] = field(default_factory=list)  # (µs, count)
    overheads: list[float] = field(default_factory=list)

    @property
    def rate(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0

    @property
    def failed(self) -> int:
        return sum(self.errors.values())


def write_scripts(target: Target, tmp: Path) -> tuple[Path, Path]:
    auth = "".join(f'wrk.headers["{k}"] = "{v}"\n' for k, v in target.headers.items())
    common = _LUA_COMMON.format(body=BODY, auth=auth)
    seq = tmp / f"{target.name}-sequential.lua"
    seq.write_text(
        common + _LUA_SEQUENTIAL.format(h1=OVERHEAD_HEADERS[0], h2=OVERHEAD_HEADERS[1]) + _LUA_DONE
    )
    load = tmp / f"{target.name}-load.lua"
    load.write_text(common + _LUA_LOAD + _LUA_DONE)
    return seq, load


def run_wrk(
    target: Target,
    script: Path,
    connections: int,
    seconds: float,
    limit: int | None = None,
) -> WrkResult:
    """wrk with one thread (it shares the client CPUs with the stub)."""
    cmd = [
        "wrk",
        "-t1",
        f"-c{connections}",
        f"-d{max(1, round(seconds))}s",
        "--timeout",
        "10s",
        "-s",
        str(script),
        target.url,
    ]
    if limit is not None:
        cmd += ["--", str(limit)]
    pids = process_tree(target.proc.pid)
    cpu0 = cpu_seconds(pids)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = ""
    try:
        assert proc.stdout is not None
        for out in proc.stdout:
            if out.startswith("BENCH_LIMIT_REACHED") and proc.poll() is None:
                proc.send_signal(signal.SIGINT)  # wrk prints its summary and exits
            elif out.startswith("BENCHJSON "):
                line = out[len("BENCHJSON ") :]
        proc.wait(timeout=seconds + 60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    cpu = cpu_seconds(pids) - cpu0
    if not line:
        err = proc.stderr.read() if proc.stderr else ""
        raise BenchError(
            f"wrk against {target.name} gave no result (exit {proc.returncode}): {err}"
        )
    data: dict[str, Any] = json.loads(line)
    return WrkResult(
        requests=data["requests"],
        seconds=data["duration_us"] / 1e6,
        errors=data["errors"],
        p50_ms=data["p50"] / 1000,
        p99_ms=data["p99"] / 1000,
        max_ms=data["max"] / 1000,
        cpu_s=cpu,
        hist=[(int(v), int(c)) for v, c in data.get("hist", [])],
        overheads=[float(x) for x in data.get("overheads", [])],
    )


def percentile(hist: list[tuple[int, int]], q: float) -> float:
    """Nearest-rank percentile (ms) of a merged µs histogram."""
    total = sum(c for _, c in hist)
    if total == 0:
        return float("nan")
    rank = max(1, int(q / 100 * total + 0.999999))
    seen = 0
    for value, count in sorted(hist):
        seen += count
        if seen >= rank:
            return value / 1000
    return sorted(hist)[-1][0] / 1000


# --------------------------------------------------------------------------- measurement


@dataclass
class Sequential:
    requests: int = 0
    failed: int = 0
    cpu_s: float = 0.0
    hist: dict[int, int] = field(default_factory=dict)
    overheads: list[float] = field(default_factory=list)

    def add(self, r: WrkResult) -> None:
        self.requests += r.requests
        self.failed += r.failed
        self.cpu_s += r.cpu_s
        for v, c in r.hist:
            self.hist[v] = self.hist.get(v, 0) + c
        self.overheads.extend(r.overheads)

    def pct(self, q: float) -> float:
        return percentile(list(self.hist.items()), q)


@dataclass
class Step:
    concurrency: int
    result: WrkResult

    @property
    def ok(self) -> bool:
        return self.result.failed == 0 and self.result.p99_ms < P99_LIMIT_MS


@dataclass
class Report:
    target: Target
    scripts: tuple[Path, Path]
    sequential: Sequential = field(default_factory=Sequential)
    steps: list[Step] = field(default_factory=list)
    rss_mb: float = 0.0
    note: str = ""

    def best(self) -> Step | None:
        ok = [s for s in self.steps if s.ok]
        return max(ok, key=lambda s: s.result.rate) if ok else None


class Clock:
    def __init__(self, budget: float) -> None:
        self.end = time.monotonic() + budget

    def left(self) -> float:
        return self.end - time.monotonic()


def measure(reports: list[Report], profile: Profile, clock: Clock) -> None:
    for rep in reports:  # warm-up: connection pools, caches, lazy imports, JIT-less first calls
        run_wrk(rep.target, rep.scripts[1], 8, profile.warmup_seconds)

    per_round = max(1, profile.requests // profile.rounds)
    print(f"concurrency 1: {profile.rounds} rounds x {per_round} requests per target")
    for i in range(profile.rounds):
        order = reports[i % len(reports) :] + reports[: i % len(reports)]
        for rep in order:
            if clock.left() < 30:
                rep.note = "time budget: fewer sequential requests"
                continue
            r = run_wrk(rep.target, rep.scripts[0], 1, min(120, clock.left() - 20), per_round)
            rep.sequential.add(r)

    print(f"load steps: {profile.step_seconds:g} s each, until p99 >= {P99_LIMIT_MS:g} ms")
    active = list(reports)
    concurrency = 1
    while active and concurrency <= profile.max_concurrency:
        for rep in list(active):
            if clock.left() < profile.step_seconds + 15:
                rep.note = "time budget: load steps stopped early"
                active.remove(rep)
                continue
            r = run_wrk(rep.target, rep.scripts[1], concurrency, profile.step_seconds)
            step = Step(concurrency, r)
            rep.steps.append(step)
            print(
                f"  {rep.target.name:<10} c={concurrency:<4} {r.rate:8.0f} req/s  "
                f"p50 {r.p50_ms:7.2f} ms  p99 {r.p99_ms:7.2f} ms  "
                f"CPU {_ms(r.cpu_s, r.requests):>6} ms/req"
                + (f"  errors {r.errors}" if r.failed else "")
            )
            if not step.ok:
                active.remove(rep)
        concurrency *= 2
    for rep in reports:
        rep.rss_mb = rss_mb(process_tree(rep.target.proc.pid))


def _ms(seconds: float, requests: int) -> str:
    return f"{seconds / requests * 1000:.2f}" if requests else "-"


# --------------------------------------------------------------------------- output


def print_report(reports: list[Report], foreign_cores: float, pinned: str) -> dict[str, Any]:
    by_name = {r.target.name: r for r in reports}
    direct = by_name.get("direct")
    rows: list[dict[str, Any]] = []
    for rep in reports:
        seq = rep.sequential
        best = rep.best()
        added50 = added99 = None
        if direct and rep is not direct and seq.requests and direct.sequential.requests:
            added50 = seq.pct(50) - direct.sequential.pct(50)
            added99 = seq.pct(99) - direct.sequential.pct(99)
        top = rep.steps[-1] if rep.steps else None
        rows.append(
            {
                "target": rep.target.name,
                "version": rep.target.version,
                "c1_requests": seq.requests,
                "c1_failed": seq.failed,
                "c1_p50_ms": seq.pct(50) if seq.requests else None,
                "c1_p99_ms": seq.pct(99) if seq.requests else None,
                "c1_max_ms": max(seq.hist) / 1000 if seq.hist else None,
                "added_p50_ms": added50,
                "added_p99_ms": added99,
                "cpu_ms_per_req_c1": seq.cpu_s / seq.requests * 1000 if seq.requests else None,
                "cpu_c1_coarse": seq.cpu_s * CLK_TCK < COARSE_TICKS,
                "cpu_ms_per_req_at_max_rate": (
                    best.result.cpu_s / best.result.requests * 1000
                    if best and best.result.requests
                    else None
                ),
                "max_rate_rps": best.result.rate if best else None,
                "max_rate_concurrency": best.concurrency if best else None,
                "max_rate_capped": bool(best and top and top.ok),  # never reached 50 ms
                "self_reported_overhead_p50_ms": (
                    statistics.median(seq.overheads) if seq.overheads else None
                ),
                "rss_mb": rep.rss_mb,
                "steps": [
                    {
                        "concurrency": s.concurrency,
                        "rps": s.result.rate,
                        "p50_ms": s.result.p50_ms,
                        "p99_ms": s.result.p99_ms,
                        "max_ms": s.result.max_ms,
                        "cpu_ms_per_req": (
                            s.result.cpu_s / s.result.requests * 1000 if s.result.requests else None
                        ),
                        "errors": s.result.failed,
                    }
                    for s in rep.steps
                ],
                "note": rep.note,
            }
        )

    def f(x: float | None, fmt: str = "{:.2f}") -> str:
        return "-" if x is None else fmt.format(x)

    print()
    print(f"Gateway benchmark ({pinned}; load generator: wrk, closed loop)")
    header = (
        f"{'target':<10} {'c1 p50':>7} {'c1 p99':>7} {'+p50':>6} {'+p99':>6} "
        f"{'CPU/req':>8} {'CPU/req':>8} {'max rate':>9} {'at c':>5} {'self p50':>8} {'RSS':>6}"
    )
    units = (
        f"{'':<10} {'ms':>7} {'ms':>7} {'ms':>6} {'ms':>6} "
        f"{'c1 ms':>8} {'load ms':>8} {'p99<50ms':>9} {'':>5} {'ms':>8} {'MB':>6}"
    )
    print(header)
    print(units)
    print("-" * len(header))
    for row in rows:
        cpu_c1 = f(row["cpu_ms_per_req_c1"])
        if row["cpu_c1_coarse"] and row["cpu_ms_per_req_c1"] is not None:
            cpu_c1 = "~" + cpu_c1
        rate = f(row["max_rate_rps"], "{:.0f}")
        if row["max_rate_capped"]:
            rate = ">=" + rate
        print(
            f"{row['target']:<10} {f(row['c1_p50_ms']):>7} {f(row['c1_p99_ms']):>7} "
            f"{f(row['added_p50_ms']):>6} {f(row['added_p99_ms']):>6} "
            f"{cpu_c1:>8} {f(row['cpu_ms_per_req_at_max_rate']):>8} "
            f"{rate:>9} {f(row['max_rate_concurrency'], '{:d}'):>5} "
            f"{f(row['self_reported_overhead_p50_ms']):>8} {row['rss_mb']:>6.0f}"
        )
    print()
    print("  +p50/+p99: latency added to the direct call at the same percentile (concurrency 1)")
    print("  max rate: highest throughput of a load step with p99 < 50 ms and no errors")
    print("            ('>=': the last step still passed; raise --max-concurrency to go further)")
    print(f"  CPU/req: server CPU time per request ('~': fewer than {COARSE_TICKS} clock ticks")
    print(f"           of {1000 / CLK_TCK:g} ms were measured, imprecise)")
    print("  self p50: median of the overhead the gateway reports itself")
    print("            (x-maestrale-overhead-ms / x-litellm-overhead-duration-ms)")
    for row in rows:
        if row["version"]:
            print(f"  {row['target']} version {row['version']}")
        if row["note"]:
            print(f"  {row['target']}: {row['note']}")
        if row["c1_failed"]:
            print(f"  {row['target']}: {row['c1_failed']} failed sequential requests")

    summary: dict[str, Any] = {"rows": rows, "foreign_cores": foreign_cores, "pinning": pinned}
    m, lt = by_name.get("maestrale"), by_name.get("litellm")
    mrow = next((r for r in rows if r["target"] == "maestrale"), None)
    lrow = next((r for r in rows if r["target"] == "litellm"), None)
    print()
    print("Targets:")
    if mrow and mrow["added_p50_ms"] is not None:
        print(
            f"  added p50 <= {TARGET_ADDED_P50_MS:g} ms at c=1: {mrow['added_p50_ms']:.2f} ms "
            f"-> {'met' if mrow['added_p50_ms'] <= TARGET_ADDED_P50_MS else 'NOT met'}"
        )
        print(
            f"  added p99 <= {TARGET_ADDED_P99_MS:g} ms at c=1: {mrow['added_p99_ms']:.2f} ms "
            f"-> {'met' if mrow['added_p99_ms'] <= TARGET_ADDED_P99_MS else 'NOT met'}"
        )
    else:
        print(f"  added p50 <= {TARGET_ADDED_P50_MS:g} ms, p99 <= {TARGET_ADDED_P99_MS:g} ms: -")
    if m and lt and mrow and lrow and mrow["max_rate_rps"] and lrow["max_rate_rps"]:
        ratio = mrow["max_rate_rps"] / lrow["max_rate_rps"]
        summary["rate_ratio_maestrale_litellm"] = ratio
        print(
            f"  rate >= {TARGET_RATE_RATIO:g}x LiteLLM's: Maestrale/LiteLLM = "
            f"{mrow['max_rate_rps']:.0f}/{lrow['max_rate_rps']:.0f} = {ratio:.2f}x "
            f"-> {'met' if ratio >= TARGET_RATE_RATIO else 'NOT met'}"
        )
    else:
        print(f"  rate >= {TARGET_RATE_RATIO:g}x LiteLLM's: -")
    if foreign_cores > 0.1:
        print(
            f"\nWARNING: other processes used {foreign_cores:.2f} cores on average during the "
            "measurement; figures are noisier than on an idle machine."
        )
    return summary


# --------------------------------------------------------------------------- profiling


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
        f"CPU {_ms(r.cpu_s, r.requests)} ms/req): {raw}"
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


# --------------------------------------------------------------------------- main


def _on_sigterm(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Maestrale vs LiteLLM gateway benchmark")
    parser.add_argument("--quick", action="store_true", help="short run (under 2 minutes)")
    parser.add_argument("--requests", type=int, help="concurrency-1 requests per target")
    parser.add_argument("--step-seconds", type=float, help="duration of each load step")
    parser.add_argument("--max-concurrency", type=int, help="last load step")
    parser.add_argument(
        "--targets",
        default="direct,maestrale,litellm",
        help="comma-separated subset of direct,maestrale,litellm",
    )
    parser.add_argument("--no-pin", action="store_true", help="do not pin processes to CPUs")
    parser.add_argument("--json", type=Path, help="also write the results as JSON")
    parser.add_argument(
        "--profile", type=Path, metavar="DIR", help="py-spy profile of Maestrale under load"
    )
    parser.add_argument(
        "--maestrale-src",
        type=Path,
        metavar="DIR",
        help="run the Maestrale server from this source dir (e.g. a `git archive` of a commit)",
    )
    parser.add_argument(
        "--setup-only", action="store_true", help="create LiteLLM's venv if absent, then exit"
    )
    args = parser.parse_args(argv)

    profile = QUICK if args.quick else FULL
    profile = Profile(
        requests=args.requests or profile.requests,
        rounds=profile.rounds,
        warmup_seconds=profile.warmup_seconds,
        step_seconds=args.step_seconds or profile.step_seconds,
        max_concurrency=args.max_concurrency or profile.max_concurrency,
        budget_seconds=profile.budget_seconds,
    )
    names = [n.strip() for n in args.targets.split(",") if n.strip()]
    unknown = set(names) - {"direct", "maestrale", "litellm"}
    if unknown:
        parser.error(f"unknown targets: {', '.join(sorted(unknown))}")
    if "direct" not in names:
        names.insert(0, "direct")  # the baseline of the added latency

    if shutil.which("wrk") is None:
        print(
            "error: this benchmark needs the wrk load generator on PATH "
            "(Debian/Ubuntu: apt-get install -y wrk; macOS: brew install wrk)",
            file=sys.stderr,
        )
        return 2
    try:
        if "litellm" in names or args.setup_only:
            ensure_litellm_venv()
    except (BenchError, subprocess.SubprocessError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.setup_only:
        return 0

    cpus = sorted(os.sched_getaffinity(0))
    gateway_cpus: set[int] | None = None
    if len(cpus) >= 2 and not args.no_pin:
        gateway_cpus = {cpus[0]}
        os.sched_setaffinity(0, set(cpus[1:]))  # stub, wrk and this script
        pinned = f"gateway on CPU {cpus[0]}, stub + wrk on CPU {','.join(map(str, cpus[1:]))}"
    else:
        pinned = "no CPU pinning"

    signal.signal(signal.SIGTERM, _on_sigterm)
    procs = Processes()
    clock = Clock(profile.budget_seconds)
    status = 0
    try:
        with tempfile.TemporaryDirectory(prefix="maestrale-gwbench-") as tmp_name:
            tmp = Path(tmp_name)
            stub, stub_port = start_stub(tmp, procs)
            reports: list[Report] = []
            for name in names:
                try:
                    if name == "direct":
                        target = start_direct(stub, stub_port)
                    elif name == "maestrale":
                        target = start_maestrale(
                            tmp, stub_port, procs, gateway_cpus, args.maestrale_src
                        )
                    else:
                        target = start_litellm(tmp, stub_port, procs, gateway_cpus)
                    check_target(target)
                except BenchError as exc:
                    print(f"skipping {name}: {exc}", file=sys.stderr)
                    status = 1
                    continue
                reports.append(Report(target, write_scripts(target, tmp)))
                print(f"{name}: {target.url} (pid {target.proc.pid})")
            busy0, ours0 = busy_cpu_seconds(), _our_cpu(reports)
            wall0 = time.monotonic()
            measure(reports, profile, clock)
            foreign = (busy_cpu_seconds() - busy0) - (_our_cpu(reports) - ours0)
            foreign_cores = max(0.0, foreign / (time.monotonic() - wall0))
            summary = print_report(reports, foreign_cores, pinned)
            if args.json:
                args.json.write_text(json.dumps(summary, indent=2))
                print(f"\nresults written to {args.json}")
            maestrale = next((r for r in reports if r.target.name == "maestrale"), None)
            if args.profile and maestrale:
                profile_maestrale(
                    maestrale.target, maestrale.scripts[1], profile.step_seconds * 2, args.profile
                )
    except KeyboardInterrupt:
        print("\ninterrupted: stopping every process started", file=sys.stderr)
        status = 130
    except BenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        status = 2
    finally:
        procs.stop_all()
    return status


def _our_cpu(reports: list[Report]) -> float:
    """CPU of the stub, the gateways, wrk and this script (to tell other processes' load)."""
    pids = {p for rep in reports for p in process_tree(rep.target.proc.pid)}
    own = resource.getrusage(resource.RUSAGE_SELF)
    return cpu_seconds(sorted(pids)) + children_cpu_seconds() + own.ru_utime + own.ru_stime


if __name__ == "__main__":
    sys.exit(main())
