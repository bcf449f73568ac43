"""The launcher that runs inside the sandbox (its source is passed to the sandbox's interpreter
with `-c`; it imports nothing but the standard library, and nothing of the server).

First it closes every descriptor but its own (stdin, stdout, stderr and the result channel:
whatever the server's process held open must never reach the code), and makes itself
non-dumpable, so that the run's processes (same uid) can neither trace it nor open its memory or
descriptors through /proc. It forks the run's process, which sets the resource limits on itself
and runs the code, and watches it: the wall-time limit, the number of the run's processes and,
where the kernel does not count the run's memory in a cgroup (`account=1`), its memory: the
anonymous and shared memory of all its processes together and what its tmpfs mounts hold. When
the run's process ends, whatever it left running is killed, and the launcher writes the run's
status and the files of the scratch directory to the result channel (a pipe to the server): one
JSON line, then the files' bytes one after the other.

Everything here runs with the run's own uid: code that tampers with the launcher can only spoil
its own report, which the server reads as untrusted, bounded input.
"""

from __future__ import annotations

import errno
import os
import resource
import select
import stat
import sys
import time

# Imported for type checking only: `typing` imports `re`, `signal` imports `enum`, each costing
# milliseconds of every run's start-up; `_signal` (the C half of `signal`) has the numbers.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_signal: Any = __import__("_signal")
SIGKILL: int = _signal.SIGKILL
SIGXCPU: int = _signal.SIGXCPU
SIGBUS: int = _signal.SIGBUS
PR_SET_DUMPABLE = 4
# The tmpfs mounts of the sandbox (bwrap.py), counted with the run's memory.
TMPFS_MOUNTS = ("/sandbox", "/tmp", "/dev/shm")

# The launcher is the init of the sandbox's pid namespace (bwrap's `--as-pid-1`): `kill(-1)`
# there reaches only the sandbox's processes, the run's processes cannot signal it (an init gets
# no signal it does not handle from its own namespace), and it reaps what they leave behind.
LAUNCHER_PID = 1
POLL_SECONDS = 0.05
LAUNCHER_FILENAME = "<string>"  # the launcher's code, given with `-c`
SKIPPED_NAMES = ("__pycache__",)
MAX_SKIPPED_LISTED = 50


def _limits(config: dict[str, Any]) -> list[tuple[int, int]]:
    cpu = int(config["cpu_seconds"])
    # The launcher is a process of the same uid in the same user namespace.
    processes = int(config["processes"]) + 1
    return [
        (resource.RLIMIT_CPU, cpu),
        (resource.RLIMIT_AS, int(config["memory_bytes"])),
        (resource.RLIMIT_NPROC, processes),
        (resource.RLIMIT_FSIZE, int(config["file_bytes"])),
        (resource.RLIMIT_CORE, 0),
        (resource.RLIMIT_NOFILE, 1024),
    ]


def _prctl() -> Any:
    """libc's prctl, through `_ctypes` (importing `ctypes` costs ~3 ms of every run's start)."""
    _ctypes: Any = __import__("_ctypes")

    class Int(_ctypes._SimpleCData):  # type: ignore[misc]
        _type_ = "i"

    class Long(_ctypes._SimpleCData):  # type: ignore[misc]
        _type_ = "l"

    class Function(_ctypes.CFuncPtr):  # type: ignore[misc]
        _flags_ = _ctypes.FUNCFLAG_CDECL
        _restype_ = Int

    class Libc:
        _handle = _ctypes.dlopen(None)

    function = Function(("prctl", Libc))
    return lambda option, value: function(Long(option), Long(value), Long(0), Long(0), Long(0))


def close_inherited(channel: int) -> None:
    """Close every descriptor but stdin, stdout, stderr and the result channel."""
    os.closerange(3, channel)
    os.closerange(channel + 1, 1 << 20)


def _full(config: dict[str, Any]) -> str:
    """The limit a full tmpfs mount is: its own size, or (`tmpfs_limit=memory`, where no cgroup
    counts the run's memory and the mounts' sizes were cut to fit within it) the memory."""
    return "memory" if config.get("tmpfs_limit") == "memory" else "scratch_size"


def _classify(exc: BaseException, config: dict[str, Any]) -> str | None:
    """The limit an exception that ended the run comes from, if any."""
    if isinstance(exc, MemoryError):
        return "memory"
    if isinstance(exc, OSError):
        if exc.errno == errno.ENOMEM:  # a tmpfs write or mapping past the cgroup's limit
            return "memory"
        if exc.errno == errno.EFBIG:
            return "file_size"
        if exc.errno == errno.ENOSPC:
            return _full(config)
        if exc.errno == errno.EAGAIN and isinstance(exc, BlockingIOError):
            return "processes"
    if isinstance(exc, RuntimeError) and "can't start new thread" in str(exc):
        return "processes"
    return None


def run_code(config: dict[str, Any], status: int, prctl: Any) -> None:
    """The run's process: limits, then the code as `__main__` (SystemExit propagates and ends
    the process as it would `python main.py`)."""
    # Dumpable again (the launcher reads its /proc files), and the first the kernel's OOM killer
    # takes in the run's cgroup (rather than the launcher, which must report).
    prctl(PR_SET_DUMPABLE, 1)
    try:
        with open("/proc/self/oom_score_adj", "w") as adjust:
            adjust.write("1000")
    except OSError:
        pass
    for which, value in _limits(config):
        hard = value + 1 if which == resource.RLIMIT_CPU else value
        resource.setrlimit(which, (value, hard))
    os.chdir(config["scratch"])
    path = config["code"]
    sys.argv = [path]
    sys.path[:0] = [config["scratch"]]
    # On the path as they are: their .pth files (code, paths of the host) are not run.
    sys.path.extend(d for d in config["site_dirs"].split(":") if d)
    if hasattr(sys.stdout, "reconfigure"):
        sys.stdout.reconfigure(line_buffering=True)
    # A module of its own, as `python main.py` has: what the code defines is found by pickle
    # (multiprocessing) as `__main__.name`.
    main = type(sys)("__main__")
    main.__file__ = path
    main.__builtins__ = __builtins__  # type: ignore[attr-defined]
    sys.modules["__main__"] = main
    try:
        with open(path, "rb") as source:
            code = compile(source.read(), path, "exec")
        exec(code, main.__dict__)
    except SystemExit:
        raise
    except BaseException as exc:
        limit = _classify(exc, config)
        if limit is not None:
            try:  # noqa: SIM105 (importing contextlib would cost start-up time)
                os.write(status, limit.encode() + b"\n")
            except OSError:
                pass
        import traceback

        tb = exc.__traceback__
        while tb is not None and tb.tb_frame.f_code.co_filename == LAUNCHER_FILENAME:
            tb = tb.tb_next  # the launcher's own frames
        traceback.print_exception(type(exc), exc, tb)
        raise SystemExit(1) from None


def _processes() -> list[int]:
    """The sandbox's processes other than the launcher."""
    mine = os.getpid()
    return [int(name) for name in os.listdir("/proc") if name.isdigit() and int(name) != mine]


def _tasks(pids: list[int]) -> int:
    """The threads of `pids` and the launcher."""
    tasks = 1
    for pid in pids:
        try:
            tasks += len(os.listdir(f"/proc/{pid}/task"))
        except OSError:
            continue
    return tasks


def _memory(pids: list[int]) -> int:
    """The memory of the run where no cgroup counts it: the anonymous and shared memory mapped
    by `pids`, pages shared between them (a fork's) counted once (their proportional share,
    Pss_Anon and Pss_Shmem), plus what the tmpfs mounts hold (a tmpfs file that is also mapped
    counts twice: the bound errs on the safe side). Memory files and System V shared memory,
    which this cannot see, are refused by the seccomp filter."""
    total = 0
    for mount in TMPFS_MOUNTS:
        try:
            found = os.statvfs(mount)
        except OSError:
            continue
        total += (found.f_blocks - found.f_bfree) * found.f_frsize
    for pid in pids:
        try:
            with open(f"/proc/{pid}/smaps_rollup", "rb") as rollup:
                for line in rollup:
                    if line.startswith((b"Pss_Anon:", b"Pss_Shmem:")):
                        total += int(line.split()[1]) * 1024
        except (OSError, ValueError, IndexError):
            continue
    return total


def _a_tmpfs_is_full() -> bool:
    for mount in TMPFS_MOUNTS:
        try:
            found = os.statvfs(mount)
        except OSError:
            continue
        if found.f_bfree == 0:
            return True
    return False


def _kill_all(child: int) -> None:
    """Kill every process of the run (what the run left behind too)."""
    if os.getpid() == LAUNCHER_PID:
        try:  # noqa: SIM105
            os.kill(-1, SIGKILL)
        except OSError:
            pass
    else:  # not in a pid namespace of our own: never signal -1 there
        try:  # noqa: SIM105
            os.killpg(child, SIGKILL)
        except OSError:
            pass


def _reap(child: int) -> tuple[int, int, Any] | None:
    """Reap every ended process (what the run orphans comes to the launcher, the init); the
    run's own process's status when it is among them."""
    found: tuple[int, int, Any] | None = None  # pid, wait status, resource usage
    while True:
        try:
            pid, code, usage = os.wait4(-1, os.WNOHANG)
        except ChildProcessError:
            return found
        if pid == 0:
            return found
        if pid == child:
            found = (pid, code, usage)


def _gone(deadline: float) -> None:
    """Reap the killed processes until none is left, up to `deadline`."""
    while time.monotonic() < deadline:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            time.sleep(0.005)


def watch(config: dict[str, Any], child: int, status: int) -> dict[str, Any]:
    """Wait for the run's process within the limits; its exit status and the limits hit."""
    started = time.monotonic()
    deadline = started + float(config["wall_seconds"])
    limits: list[str] = []
    try:
        waiter = os.pidfd_open(child)
    except (AttributeError, OSError):
        waiter = -1
    max_tasks = int(config["processes"]) + 1
    max_memory = int(config["memory_bytes"])
    account = config.get("account") == "1"
    waited = None
    while True:
        waited = _reap(child)
        if waited is not None:
            break
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            limits.append("wall_time")
            _kill_all(child)
            break
        pids = _processes()
        if "processes" not in limits and _tasks(pids) >= max_tasks:
            limits.append("processes")
        if account and _memory(pids) > max_memory:
            limits.append("memory")
            _kill_all(child)
            break
        if waiter >= 0:
            select.select([waiter], [], [], min(POLL_SECONDS, remaining))
        else:
            time.sleep(min(0.01, remaining))
    if waited is None:
        waited = os.wait4(child, 0)
    _, code, usage = waited
    exit_code = os.waitstatus_to_exitcode(code)
    cpu = usage.ru_utime + usage.ru_stime
    if exit_code == -SIGXCPU or (
        exit_code == -SIGKILL and cpu >= float(config["cpu_seconds"]) and not limits
    ):
        limits.insert(0, "cpu_time")
    os.set_blocking(status, False)
    try:
        reported = os.read(status, 4096).decode(errors="replace").split()
    except OSError:
        reported = []
    if exit_code == -SIGBUS and _a_tmpfs_is_full():
        # A page of a mapped file could not be had: its tmpfs is full.
        reported.append(_full(config))
    for limit in ("memory", "file_size", "scratch_size", "processes"):
        if limit in reported and limit not in limits:
            limits.append(limit)
    _kill_all(child)
    _gone(time.monotonic() + 2)
    return {
        "exit_code": exit_code,
        "cpu_seconds": round(cpu, 3),
        "wall_seconds": round(time.monotonic() - started, 3),
        "max_rss_bytes": usage.ru_maxrss * 1024,
        "limits": limits,
    }


def collect(config: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(the files to give back: name, path and size; the files skipped and why), in path order.
    Regular files only; hidden names and links are left out."""
    root = config["scratch"]
    found: list[tuple[str, str, int]] = []
    for directory, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = sorted(
            d for d in dirnames if not d.startswith(".") and d not in SKIPPED_NAMES
        )
        for name in sorted(filenames):
            if name.startswith("."):
                continue
            path = os.path.join(directory, name)
            try:
                info = os.lstat(path)
            except OSError:
                continue
            if not stat.S_ISREG(info.st_mode):
                continue
            found.append((os.path.relpath(path, root), path, info.st_size))
    found.sort()
    kept: list[dict[str, Any]] = []
    skipped: list[dict[str, Any]] = []
    total = 0
    for name, path, size in found:
        if len(kept) >= int(config["max_files"]):
            skipped.append({"name": name, "size": size, "reason": "count"})
        elif total + size > int(config["files_bytes"]):
            skipped.append({"name": name, "size": size, "reason": "size"})
        else:
            kept.append({"name": name, "path": path, "size": size})
            total += size
    return kept, skipped[:MAX_SKIPPED_LISTED]


def _string(text: str) -> str:
    escaped = [
        f"\\u{ord(char):04x}"
        if char in '"\\' or char < " " or "\ud800" <= char <= "\udfff"
        else char
        for char in text
    ]
    return '"' + "".join(escaped) + '"'


def to_json(value: Any) -> str:
    """`value` (dicts, lists, strings, numbers, booleans, None) as JSON (the json module's
    import, regular expressions and all, would cost a run's start-up time)."""
    if value is None or isinstance(value, bool):
        return {None: "null", True: "true", False: "false"}[value]
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, dict):
        return "{" + ",".join(f"{_string(str(k))}:{to_json(v)}" for k, v in value.items()) + "}"
    return "[" + ",".join(to_json(item) for item in value) + "]"


def parse_config(arguments: list[str]) -> dict[str, str]:
    """The run's configuration, `key=value` arguments."""
    return dict(argument.split("=", 1) for argument in arguments)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def report(config: dict[str, Any], result: dict[str, Any]) -> None:
    """The status line, then each kept file's bytes, on the result channel."""
    channel = int(config["channel"])
    kept, skipped = collect(config)
    result["files"] = [{"name": f["name"], "size": f["size"]} for f in kept]
    result["skipped"] = skipped
    _write_all(channel, to_json(result).encode() + b"\n")
    for entry in kept:
        remaining = int(entry["size"])
        with open(entry["path"], "rb") as source:
            while remaining > 0:
                chunk = source.read(min(1 << 20, remaining))
                if not chunk:  # shrunk since: pad to the announced size
                    chunk = bytes(min(1 << 20, remaining))
                _write_all(channel, chunk)
                remaining -= len(chunk)
    os.close(channel)


def main() -> None:
    config = parse_config(sys.argv[1:])
    close_inherited(int(config["channel"]))
    prctl = _prctl()
    prctl(PR_SET_DUMPABLE, 0)
    status_read, status_write = os.pipe()
    child = os.fork()
    if child == 0:
        os.close(status_read)
        os.close(int(config["channel"]))
        run_code(config, status_write, prctl)
        return  # the interpreter ends the process (atexit handlers, threads joined)
    os.close(status_write)
    result = watch(config, child, status_read)
    report(config, result)


if __name__ == "__main__":
    main()
