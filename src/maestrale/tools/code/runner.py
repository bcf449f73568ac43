"""A run of code in a sandbox: bwrap started with the code in a memory file, the seccomp filter
and a pipe for the launcher's report, stdout and stderr read under one byte budget, the wall
time enforced from outside too (the whole process group killed: bwrap's `--die-with-parent` and
the pid namespace take every process of the sandbox with it), and the report and the produced
files read back. Where the machine allows, the sandbox is born in a cgroup of its own (see
`cgroups.py`), whose memory and task limits the kernel enforces.

bwrap is started by `subprocess.Popen` with `close_fds`, whatever the event loop: uvloop's own
`subprocess_exec` passes every inheritable descriptor of the server on (the supervisor's
listening socket among them), and the sandbox must get only the descriptors named here. The
launcher closes anything else it finds before the code runs, too.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from maestrale.tools.code import seccomp
from maestrale.tools.code.bwrap import CODE_PATH, SCRATCH, Bubblewrap, command
from maestrale.tools.code.cgroups import (
    EXTRA_TASKS,
    JOIN_FAILED,
    CgroupHost,
    RunCgroup,
    find_cgroups,
    run_name,
)
from maestrale.tools.code.python_runtime import PythonRuntime

if TYPE_CHECKING:
    from maestrale.config import Settings

log = logging.getLogger("maestrale.tools.code")

# Beyond the wall time, for the launcher to stop the run, report and hand the files back; the
# outer limit only matters when the launcher itself was stopped.
GRACE_SECONDS = 5.0
# How long the pipes of a killed sandbox may take to end.
DRAIN_SECONDS = 10.0
HEADER_LIMIT = 1 << 20
READ_CHUNK = 1 << 16
# The limits a run can hit, as `SandboxResult.limits` names them.
LIMIT_NAMES = (
    "wall_time",
    "cpu_time",
    "memory",
    "processes",
    "file_size",
    "scratch_size",
    "output",
)
LAUNCHER_SOURCE = (Path(__file__).parent / "launcher.py").read_text(encoding="utf-8")


@dataclass(frozen=True, slots=True)
class SandboxLimits:
    """What one run may use (see the `code_interpreter_*` settings)."""

    cpu_seconds: int = 30
    wall_seconds: float = 60.0
    memory_bytes: int = 1 << 30
    processes: int = 32
    file_bytes: int = 64 << 20
    scratch_bytes: int = 128 << 20
    output_bytes: int = 64 << 10
    max_files: int = 10
    files_bytes: int = 32 << 20

    @classmethod
    def of(cls, settings: Settings) -> SandboxLimits:
        return cls(
            cpu_seconds=settings.code_interpreter_cpu_seconds,
            wall_seconds=settings.code_interpreter_wall_seconds,
            memory_bytes=settings.code_interpreter_memory_bytes,
            processes=settings.code_interpreter_processes,
            file_bytes=settings.code_interpreter_file_bytes,
            scratch_bytes=settings.code_interpreter_scratch_bytes,
            output_bytes=settings.code_interpreter_output_bytes,
            max_files=settings.code_interpreter_max_files,
            files_bytes=settings.code_interpreter_files_bytes,
        )


@dataclass(frozen=True, slots=True)
class ProducedFile:
    name: str  # its path in the scratch directory
    data: bytes


@dataclass(slots=True)
class SandboxResult:
    stdout: str
    stderr: str
    # The code's exit status (negative: the signal that killed it); None when unknown (the run
    # was stopped from outside, or the sandbox failed).
    exit_code: int | None
    limits: list[str]  # the limits hit, the one that stopped the run first
    duration_ms: int
    cpu_seconds: float | None = None
    files: list[ProducedFile] = field(default_factory=list)
    skipped: list[dict[str, Any]] = field(default_factory=list)  # name, size, reason
    failure: str | None = None  # the sandbox failed (not the code): why

    @property
    def limit(self) -> str | None:
        return self.limits[0] if self.limits else None


@dataclass(slots=True)
class _Report:
    exit_code: int
    cpu_seconds: float | None
    limits: list[str]
    files: list[tuple[str, int]]
    skipped: list[dict[str, Any]]


def _parse_report(line: bytes, limits: SandboxLimits) -> _Report | None:
    """The launcher's status line, checked (it is written inside the sandbox)."""
    try:
        data = json.loads(line)
        exit_code = data["exit_code"]
        if not isinstance(exit_code, int) or isinstance(exit_code, bool):
            return None
        cpu = data.get("cpu_seconds")
        hit = [name for name in data.get("limits", []) if name in LIMIT_NAMES]
        files: list[tuple[str, int]] = []
        total = 0
        for entry in data.get("files", []):
            name, size = entry["name"], entry["size"]
            if not isinstance(name, str) or not isinstance(size, int) or size < 0:
                return None
            total += size
            files.append((name[:255], size))
        if len(files) > limits.max_files or total > limits.files_bytes:
            return None
        skipped = [
            {"name": str(s["name"])[:255], "size": int(s["size"]), "reason": str(s["reason"])[:16]}
            for s in data.get("skipped", [])[:50]
        ]
    except (ValueError, KeyError, TypeError, AttributeError):
        return None
    return _Report(
        exit_code,
        float(cpu) if isinstance(cpu, (int, float)) else None,
        list(dict.fromkeys(hit)),
        files,
        skipped,
    )


class _Process:
    """A started bwrap: its pid, stdout and stderr as streams, and its exit awaited through a
    pidfd (no child watcher of either event loop knows this process)."""

    def __init__(self, popen: subprocess.Popen[bytes]) -> None:
        self.popen = popen
        self.pid = popen.pid
        self.returncode: int | None = None
        self.stdout: asyncio.StreamReader | None = None
        self.stderr: asyncio.StreamReader | None = None
        self._exited: asyncio.Future[None] | None = None
        self._poller: asyncio.Task[None] | None = None

    async def connect(self) -> None:
        loop = asyncio.get_running_loop()
        self.stdout = await _stream(loop, self.popen.stdout)
        self.stderr = await _stream(loop, self.popen.stderr)
        self._exited = loop.create_future()
        try:
            pidfd = os.pidfd_open(self.pid)
        except OSError:  # a kernel older than 5.3: poll instead
            self._poller = loop.create_task(self._poll())
            return
        loop.add_reader(pidfd, self._reap, pidfd)

    def _reap(self, pidfd: int) -> None:
        if self._collect():
            loop = asyncio.get_running_loop()
            loop.remove_reader(pidfd)
            os.close(pidfd)

    def _collect(self) -> bool:
        try:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
        except ChildProcessError:
            pid, status = self.pid, 255 << 8
        if pid == 0:
            return False
        self.returncode = self.popen.returncode = os.waitstatus_to_exitcode(status)
        if self._exited is not None and not self._exited.done():
            self._exited.set_result(None)
        return True

    async def _poll(self) -> None:
        while not self._collect():  # noqa: ASYNC110 (the exit is no event here: polled)
            await asyncio.sleep(0.01)

    async def wait(self) -> int | None:
        if self._exited is not None:
            await asyncio.shield(self._exited)
        return self.returncode


async def _stream(loop: asyncio.AbstractEventLoop, pipe: Any) -> asyncio.StreamReader:
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), pipe)
    return reader


def _spawn(cmd: list[str], pass_fds: tuple[int, ...], options: dict[str, Any]) -> _Process:
    popen = subprocess.Popen(
        cmd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        close_fds=True,
        pass_fds=pass_fds,
        start_new_session=True,
        **options,
    )
    return _Process(popen)


class _Run:
    """One started sandbox: its outputs read under the budget, its report and files."""

    def __init__(self, proc: _Process, channel: int, limits: SandboxLimits) -> None:
        self.proc = proc
        self.channel = channel
        self.limits = limits
        self.stdout = bytearray()
        self.stderr = bytearray()
        self.output_exceeded = False
        self.report: _Report | None = None
        self.files: list[ProducedFile] = []

    def kill(self) -> None:
        if self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGKILL)

    async def _read(self, stream: asyncio.StreamReader | None, into: bytearray) -> None:
        if stream is None:
            return
        while chunk := await stream.read(READ_CHUNK):
            room = self.limits.output_bytes - len(self.stdout) - len(self.stderr)
            into += chunk[: max(room, 0)]
            if len(chunk) > room and not self.output_exceeded:
                self.output_exceeded = True
                self.kill()
            # Past the budget the rest is read and dropped: the pipe must reach its end for the
            # process to be waited (it is killed: what remains is at most a pipe's buffer).

    async def _read_report(self) -> None:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=HEADER_LIMIT)
        pipe = os.fdopen(self.channel, "rb", buffering=0)
        self.channel = -1  # the pipe's now
        transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), pipe
        )
        try:
            line = await reader.readline()
            report = _parse_report(line, self.limits) if line.endswith(b"\n") else None
            if report is None:
                return
            files = [
                ProducedFile(name, await reader.readexactly(size)) for name, size in report.files
            ]
            self.report, self.files = report, files
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError):
            return
        finally:
            transport.close()

    async def wait(self) -> bool:
        """Read everything until the sandbox ends; False when it had to be killed at the outer
        wall-time limit. Cancelling kills the sandbox."""
        readers = asyncio.ensure_future(
            asyncio.gather(
                self._read(self.proc.stdout, self.stdout),
                self._read(self.proc.stderr, self.stderr),
                self._read_report(),
                self.proc.wait(),
            )
        )
        try:
            await asyncio.wait_for(
                asyncio.shield(readers), self.limits.wall_seconds + GRACE_SECONDS
            )
            return True
        except TimeoutError:
            self.kill()
            await self._drain(readers)
            return False
        except asyncio.CancelledError:
            self.kill()
            await self._drain(readers)
            raise

    async def _drain(self, readers: asyncio.Future[Any]) -> None:
        """Once the sandbox is killed its pipes end: let the readers finish (a pipe left unread
        would keep the process from being waited), within a bound."""
        try:
            await asyncio.wait_for(asyncio.shield(readers), DRAIN_SECONDS)
        except TimeoutError:
            readers.cancel()
            log.warning("a killed sandbox (bwrap pid %s) did not close its pipes", self.proc.pid)


class Sandbox:
    """Runs code in bubblewrap sandboxes of one Python runtime; the kernel counts each run's
    memory in a cgroup of its own where `kernel_limits` and the machine allow it (`cgroups`),
    else the launcher does."""

    def __init__(
        self, bwrap: Bubblewrap, runtime: PythonRuntime, *, kernel_limits: bool = True
    ) -> None:
        self.bwrap = bwrap
        self.runtime = runtime
        self.cgroups: CgroupHost | None = find_cgroups() if kernel_limits else None
        self.seccomp = seccomp.program(memory_counted=self.cgroups is not None)

    def tmpfs_bytes(self, limits: SandboxLimits) -> int:
        """The size of each of the sandbox's three tmpfs mounts: the scratch size, cut where no
        cgroup counts the run's memory so that the three together fit within the memory limit
        (the kernel then bounds them; the launcher only polls the rest)."""
        if self.cgroups is not None:
            return limits.scratch_bytes
        return min(limits.scratch_bytes, limits.memory_bytes // 3)

    def _config(self, limits: SandboxLimits, channel: int) -> list[str]:
        """The launcher's configuration, as its `key=value` arguments."""
        config = {
            "channel": channel,
            "code": CODE_PATH,
            "scratch": SCRATCH,
            "site_dirs": ":".join(self.runtime.site_dirs),
            "cpu_seconds": limits.cpu_seconds,
            "wall_seconds": limits.wall_seconds,
            "memory_bytes": limits.memory_bytes,
            "processes": limits.processes,
            "file_bytes": limits.file_bytes,
            "max_files": limits.max_files,
            "files_bytes": limits.files_bytes,
            "account": "0" if self.cgroups is not None else "1",
            "tmpfs_limit": "scratch"
            if self.tmpfs_bytes(limits) == limits.scratch_bytes
            else "memory",
        }
        return [f"{key}={value}" for key, value in config.items()]

    async def run(self, code: str, limits: SandboxLimits) -> SandboxResult:
        """Run `code` as a script in a fresh sandbox; cancelling kills the sandbox."""
        started = time.monotonic()
        cgroup = None
        oom = False
        if self.cgroups is not None:
            try:
                cgroup = self.cgroups.create(
                    run_name(), limits.memory_bytes, limits.processes + EXTRA_TASKS
                )
            except OSError as exc:
                return SandboxResult(
                    "", "", None, [], _ms(started), failure=f"no cgroup for the run: {exc}"
                )
        try:
            result = await self._run(code, limits, started, cgroup)
        finally:
            if cgroup is not None:
                oom = cgroup.oom_killed()
                await asyncio.to_thread(cgroup.remove)
        if oom and "memory" not in result.limits:
            # The kernel stopped the run (the launcher could only see a killed process).
            result.limits.insert(0, "memory")
            result.failure = None
        elif cgroup is not None and result.failure and self._join_failed(result):
            result.failure = "the sandbox could not join its cgroup"
        return result

    @staticmethod
    def _join_failed(result: SandboxResult) -> bool:
        return result.failure is not None and result.failure.endswith(f"status {JOIN_FAILED})")

    async def _run(
        self, code: str, limits: SandboxLimits, started: float, cgroup: RunCgroup | None
    ) -> SandboxResult:
        source = code.encode("utf-8", "replace")
        opened: list[int] = []
        channel_read = -1
        try:
            code_fd = seccomp.memory_file(source)
            opened.append(code_fd)
            channel_read, channel_write = os.pipe()
            opened.append(channel_write)
            argv = ["-I", "-S", "-c", LAUNCHER_SOURCE, *self._config(limits, channel_write)]
            seccomp_fd = None
            if self.seccomp is not None:
                seccomp_fd = seccomp.memory_file(self.seccomp)
                opened.append(seccomp_fd)
            cmd = command(
                self.bwrap,
                self.runtime,
                self.tmpfs_bytes(limits),
                code_fd=code_fd,
                seccomp_fd=seccomp_fd,
                argv=argv,
            )
            if cgroup is not None:
                cmd = [*cgroup.join_prefix(), *cmd]
            proc = _spawn(cmd, tuple(opened), self.bwrap.spawn_options())
        except OSError as exc:
            if channel_read >= 0:
                os.close(channel_read)
            return SandboxResult(
                "", "", None, [], _ms(started), failure=f"bwrap could not start: {exc}"
            )
        finally:
            for fd in opened:
                os.close(fd)
        run = _Run(proc, channel_read, limits)
        try:
            await proc.connect()
            finished = await run.wait()
        finally:
            run.kill()
            if run.channel >= 0:  # never read (cancelled before it started)
                os.close(run.channel)
            with contextlib.suppress(ProcessLookupError, TimeoutError):
                await asyncio.wait_for(proc.wait(), DRAIN_SECONDS)
        return _result(run, finished, started)


def _result(run: _Run, finished: bool, started: float) -> SandboxResult:
    stdout = run.stdout.decode(errors="replace")
    stderr = run.stderr.decode(errors="replace")
    report = run.report
    limits = [] if report is None else list(report.limits)
    if run.output_exceeded:
        limits.insert(0, "output")
    elif not finished and "wall_time" not in limits:
        limits.insert(0, "wall_time")
    result = SandboxResult(
        stdout,
        stderr,
        None if report is None else report.exit_code,
        limits,
        _ms(started),
        cpu_seconds=None if report is None else report.cpu_seconds,
        files=run.files,
        skipped=[] if report is None else report.skipped,
    )
    if report is None and not limits:
        status = run.proc.returncode
        result.failure = f"the sandbox ended without a report (bwrap exit status {status})"
    return result


def _ms(started: float) -> int:
    return int((time.monotonic() - started) * 1000)
