"""The processes a benchmark run starts, and what /proc says about them (CPU time, RSS)."""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx

CLK_TCK = os.sysconf("SC_CLK_TCK")


class BenchError(Exception):
    """A clear, expected failure (missing tool, target that does not start)."""


@dataclass
class Processes:
    """Every process this run started, stopped in reverse order whatever happens."""

    started: list[tuple[subprocess.Popen[bytes], str]] = field(default_factory=list)

    def add(self, proc: subprocess.Popen[bytes], how: str) -> None:
        self.started.append((proc, how))

    def stop_all(self) -> None:
        for proc, how in reversed(self.started):
            with contextlib.suppress(Exception):
                stop_process(proc, how)
        self.started.clear()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def stop_process(proc: subprocess.Popen[bytes], how: str) -> None:
    """SIGTERM (to the whole process group with how="group"), SIGKILL after 10 s."""
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
def affinity(cpus: set[int] | None) -> Iterator[None]:
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


def wait_http(
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


def rss_by_process(pids: list[int]) -> dict[int, float]:
    """VmRSS (MB) of each process still alive."""
    out: dict[int, float] = {}
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    out[pid] = int(line.split()[1]) / 1024
        except OSError:
            continue
    return out


@dataclass
class Rss:
    """The largest process (MB) and the whole tree (MB)."""

    per_process: float = 0.0
    total: float = 0.0

    def grow(self, other: Rss) -> None:
        self.per_process = max(self.per_process, other.per_process)
        self.total = max(self.total, other.total)


def rss_of(pid: int) -> Rss:
    sizes = rss_by_process(process_tree(pid))
    return Rss(max(sizes.values(), default=0.0), sum(sizes.values()))


class RssSampler:
    """Samples the RSS of a process tree on a thread while a measurement runs: the peaks."""

    def __init__(self, pid: int, every: float = 0.25) -> None:
        self.pid = pid
        self.every = every
        self.peak = Rss()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            self.peak.grow(rss_of(self.pid))

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak.grow(rss_of(self.pid))


def busy_cpu_seconds() -> float:
    """CPU time all processes of the machine used so far (from /proc/stat)."""
    fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(x) for x in fields[:8])
    return (user + nice + system + irq + softirq + steal) / CLK_TCK


def children_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime
