"""wrk, the load generator: its Lua scripts, one run against a target, merged histograms.

wrk runs with one thread (it shares the client CPUs with the stub). The concurrency-1 script
keeps the full latency histogram (1 µs buckets, so that rounds can be merged) and the overhead
headers the gateways report; the load script has no response() hook (it would cost wrk a Lua call
and a header table per response).
"""

from __future__ import annotations

import json
import signal
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.gateway.processes import BenchError, cpu_seconds, process_tree
from bench.gateway.targets import BODY, OVERHEAD_HEADERS, Target

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
