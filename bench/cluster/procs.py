"""Processes of the local cluster, known by pid and start time so that a later command (`down`,
the fault bench) finds them again, and never signals another process that reused a pid."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from bench.gateway.processes import BenchError


def _stat_fields(pid: int) -> list[str] | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def start_ticks(pid: int) -> int:
    """When the process started (clock ticks since boot): with the pid, its identity."""
    fields = _stat_fields(pid)
    return int(fields[19]) if fields else -1


@dataclass
class Proc:
    """A process of the cluster: its pid and start time (see the module docstring)."""

    pid: int
    ticks: int
    # Set when this process started it: polled, so that a killed child does not stay a zombie.
    popen: subprocess.Popen[bytes] | None = field(default=None, repr=False, compare=False)

    @classmethod
    def of(cls, pid: int) -> Proc:
        return cls(pid, start_ticks(pid))

    def alive(self) -> bool:
        self._reap()
        fields = _stat_fields(self.pid)
        if fields is None or int(fields[19]) != self.ticks:
            return False
        # A zombie (state Z) is dead, only not reaped yet by its parent; but the leader of a
        # killed process can be a zombie while its other threads still exit, holding its files
        # (sockets) open.
        return fields[0] != "Z" or _threads_alive(self.pid)

    def signal(self, sig: signal.Signals, group: bool = False) -> bool:
        """Send `sig` (to its process group when `group`); False if it was gone already."""
        if not self.alive():
            return False
        with contextlib.suppress(ProcessLookupError):
            if group:
                os.killpg(self.pid, sig)
            else:
                os.kill(self.pid, sig)
            return True
        return False

    def wait_gone(self, timeout: float, every: float = 0.05) -> bool:
        deadline = time.monotonic() + timeout
        while self.alive():
            if time.monotonic() > deadline:
                return False
            self._reap()
            time.sleep(every)
        self._reap()
        return True

    def _reap(self) -> None:
        if self.popen is not None:
            self.popen.poll()

    def stop(self, timeout: float = 15.0, group: bool = True) -> None:
        """SIGTERM, then SIGKILL after `timeout` (the whole group: the process leads a session)."""
        if self.signal(signal.SIGTERM, group):
            self.finish(timeout, group)

    def finish(self, timeout: float, group: bool = True) -> None:
        """Wait for a process told to stop (one SIGTERM only: a second one makes uvicorn skip
        its graceful shutdown); SIGKILL after `timeout`, and whatever its group left behind."""
        if not self.wait_gone(timeout):
            self.signal(signal.SIGKILL, group)
            self.wait_gone(5)
        if group:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, signal.SIGKILL)

    def kill(self) -> tuple[float, float]:
        """SIGKILL, the process only (what a crash does), and wait until it is gone (its
        sockets closed); when the signal was sent and when it was gone (time.monotonic())."""
        self.signal(signal.SIGKILL)
        sent = time.monotonic()
        self.wait_gone(10, every=0.002)
        return sent, time.monotonic()


def _threads_alive(pid: int) -> bool:
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return False
    for task in tasks:
        try:
            state = (task / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state != "Z":
            return True
    return False


def connected_to(pid: int, port: int) -> bool:
    """Whether the process holds an established TCP connection to `port` on this machine."""
    inodes = set()
    try:
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            with contextlib.suppress(OSError):
                link = os.readlink(fd)
                if link.startswith("socket:["):
                    inodes.add(link[8:-1])
    except OSError:
        return False
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(table).read_text().splitlines()[1:]:
                fields = line.split()
                remote_port = int(fields[2].rsplit(":", 1)[1], 16)
                if remote_port == port and fields[3] == "01" and fields[9] in inodes:
                    return True  # 01: ESTABLISHED
    return False


def launch(cmd: list[str], env: dict[str, str], log: Path, cwd: Path | None = None) -> Proc:
    """Start `cmd` in a session of its own (it outlives the command that started it), its
    output appended to `log`."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        out.write(f"--- {time.strftime('%Y-%m-%d %H:%M:%S')} {cmd[0]} starting\n".encode())
        out.flush()
        try:
            proc = subprocess.Popen(
                cmd,
                env=env,
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        except OSError as exc:
            raise BenchError(f"cannot start {cmd[0]}: {exc}") from exc
    return Proc(proc.pid, start_ticks(proc.pid), proc)


def log_tail(log: Path, chars: int = 3000) -> str:
    try:
        return log.read_text(errors="replace")[-chars:]
    except OSError:
        return "(no log)"


def run(cmd: list[str], what: str, timeout: float = 120, **kw: object) -> str:
    """Run a command to its end; its output, or a BenchError that shows it."""
    try:
        done = subprocess.run(
            cmd,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            **kw,  # type: ignore[call-overload]
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise BenchError(f"{what} failed: {exc}") from exc
    if done.returncode != 0:
        raise BenchError(f"{what} failed ({done.returncode}):\n{done.stdout}{done.stderr}")
    return str(done.stdout)
