"""A cgroup per run, where the machine lets this server make them: the kernel then counts every
page the run's processes charge (anonymous memory, page cache, shmem: tmpfs, /dev/shm, memory
files, mapped files) against one limit, and its number of tasks against another, and a run over
its memory limit is killed by the kernel's OOM killer within its own cgroup.

- cgroup v2: the server's cgroup, when it is the root of its cgroup namespace (a container's), or
  else its parent, must offer `memory` and `pids` to its children (`cgroup.subtree_control`) and
  be writable (root, or a delegated subtree). Each run gets `memory.max`, `memory.swap.max` 0 and
  `pids.max`.
- cgroup v1 (hybrid hierarchies, as here): writable `memory` and `pids` hierarchies; the run's
  cgroups are children of the server's own ones, with `memory.limit_in_bytes` (and
  `memory.memsw.limit_in_bytes`: no swap) and `pids.max`.

Elsewhere (no such cgroups) the launcher counts instead, and the seccomp filter refuses what it
cannot count (see `launcher.py` and `seccomp.py`).

The sandbox joins its cgroup before bwrap starts: the command begins with a shell that writes its
own pid into the cgroup's `cgroup.procs`, then becomes setpriv and bwrap (`exec`), so that every
process of the sandbox is born inside it.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import shutil
import time
from dataclasses import dataclass

log = logging.getLogger("maestrale.tools.code")

ROOT = "/sys/fs/cgroup"
PREFIX = "maestrale-sandbox-"
# The shell that joins the cgroups named before `--`, then becomes the rest of the command.
JOIN = 'while [ "$1" != -- ]; do echo $$ > "$1" || exit 125; shift; done; shift; exec "$@"'
JOIN_FAILED = 125
# Beyond the run's processes: the launcher and bwrap (bwrap forks once before the launcher).
EXTRA_TASKS = 4
# One sequence for the whole process: each Sandbox (one per runtime, and several may be prepared
# at once) names its runs from it, so two runs never ask for the same cgroup.
_RUNS = itertools.count()


def run_name() -> str:
    """A name for a run's cgroup, unique on the host while this process lives."""
    return f"{PREFIX}{os.getpid()}-{next(_RUNS)}"


@dataclass(frozen=True, slots=True)
class CgroupHost:
    """Where the runs' cgroups are made."""

    version: int  # 1 or 2
    memory: str  # the parent directory of the runs' cgroups (v2: of both controllers)
    pids: str  # v1: the pids hierarchy's parent directory; v2: the same as `memory`
    shell: str

    def create(self, name: str, memory_bytes: int, tasks: int) -> RunCgroup:
        """A run's cgroup, its limits written; raises OSError when it cannot be made."""
        made: list[str] = []
        try:
            if self.version == 2:
                path = os.path.join(self.memory, name)
                os.mkdir(path)
                made.append(path)
                _write(path, "memory.max", memory_bytes)
                _write(path, "memory.swap.max", 0, optional=True)
                _write(path, "pids.max", tasks)
                return RunCgroup(self, [path], path)
            memory = os.path.join(self.memory, name)
            os.mkdir(memory)
            made.append(memory)
            _write(memory, "memory.limit_in_bytes", memory_bytes)
            _write(memory, "memory.memsw.limit_in_bytes", memory_bytes, optional=True)
            pids = os.path.join(self.pids, name)
            os.mkdir(pids)
            made.append(pids)
            _write(pids, "pids.max", tasks)
            return RunCgroup(self, made, memory)
        except OSError:
            for path in reversed(made):
                with contextlib.suppress(OSError):
                    os.rmdir(path)
            raise


@dataclass(slots=True)
class RunCgroup:
    host: CgroupHost
    paths: list[str]  # one per hierarchy
    memory: str  # the one with the memory controller

    def join_prefix(self) -> list[str]:
        """What the sandbox's command starts with, to be born in this cgroup."""
        procs = [os.path.join(path, "cgroup.procs") for path in self.paths]
        return [self.host.shell, "-c", JOIN, "sh", *procs, "--"]

    def oom_killed(self) -> bool:
        """Whether the kernel killed a process of the run at its memory limit."""
        name = "memory.events" if self.host.version == 2 else "memory.oom_control"
        try:
            with open(os.path.join(self.memory, name), encoding="ascii") as events:
                for line in events:
                    key, _, value = line.partition(" ")
                    if key == "oom_kill":
                        return int(value) > 0
        except (OSError, ValueError):
            return False
        return False

    def remove(self) -> None:
        """Remove the cgroups once their processes have gone (they may take a moment to be
        reaped after the sandbox ended)."""
        deadline = time.monotonic() + 2.0
        for path in self.paths:
            while True:
                try:
                    os.rmdir(path)
                    break
                except FileNotFoundError:
                    break
                except OSError as exc:
                    if time.monotonic() > deadline:
                        log.warning("the sandbox cgroup %s could not be removed: %s", path, exc)
                        break
                    time.sleep(0.01)


def _write(directory: str, name: str, value: int, *, optional: bool = False) -> None:
    path = os.path.join(directory, name)
    if optional and not os.path.exists(path):
        return
    with open(path, "w", encoding="ascii") as handle:
        handle.write(f"{value}\n")


def _own(hierarchy: str) -> str | None:
    """This process's cgroup in a v1 hierarchy (`memory`, `pids`), or the v2 one (""), as a
    path under its mount point."""
    try:
        with open("/proc/self/cgroup", encoding="utf-8") as cgroups:
            for line in cgroups:
                _, controllers, path = line.rstrip("\n").split(":", 2)
                if hierarchy in controllers.split(",") or (not hierarchy and not controllers):
                    return path
    except (OSError, ValueError):
        return None
    return None


def _usable(parent: str, files: tuple[str, ...]) -> bool:
    """Whether a child cgroup of `parent` can be made and has `files` (checked by making one)."""
    probe = os.path.join(parent, f"{PREFIX}probe-{os.getpid()}")
    try:
        os.mkdir(probe)
    except FileExistsError:
        pass
    except OSError:
        return False
    try:
        return all(os.path.exists(os.path.join(probe, name)) for name in files)
    finally:
        with contextlib.suppress(OSError):
            os.rmdir(probe)


def _v2() -> str | None:
    own = _own("")
    if own is None or not os.path.exists(os.path.join(ROOT, "cgroup.controllers")):
        return None
    parent = (
        os.path.join(ROOT, own.lstrip("/"))
        if own == "/"
        else os.path.dirname(os.path.join(ROOT, own.lstrip("/")))
    )
    try:
        with open(os.path.join(parent, "cgroup.subtree_control"), encoding="ascii") as control:
            offered = control.read().split()
    except OSError:
        return None
    if "memory" not in offered or "pids" not in offered:
        return None
    return parent if _usable(parent, ("memory.max", "pids.max", "cgroup.procs")) else None


def _v1(controller: str, files: tuple[str, ...]) -> str | None:
    own = _own(controller)
    mount = os.path.join(ROOT, controller)
    if own is None or not os.path.isdir(mount):
        return None
    parent = os.path.join(mount, own.lstrip("/"))
    return parent if _usable(parent, files) else None


def _sweep(parent: str) -> None:
    """Remove the runs' cgroups that a server process which ended abruptly left behind (empty:
    its sandboxes died with it); named `PREFIX<pid>-<n>`, they are another live process's while
    that pid runs."""
    try:
        entries = os.listdir(parent)
    except OSError:
        return
    for name in entries:
        if not name.startswith(PREFIX):
            continue
        owner = name[len(PREFIX) :].split("-", 1)[0]
        if owner.isdigit() and not os.path.exists(f"/proc/{owner}"):
            with contextlib.suppress(OSError):
                os.rmdir(os.path.join(parent, name))


def find_cgroups() -> CgroupHost | None:
    """Where this server can make the runs' cgroups, or None (see the module's docstring)."""
    shell = shutil.which("sh")
    if shell is None:
        return None
    found = None
    v2 = _v2()
    if v2 is not None:
        found = CgroupHost(2, v2, v2, shell)
    else:
        memory = _v1("memory", ("memory.limit_in_bytes", "memory.oom_control", "cgroup.procs"))
        pids = _v1("pids", ("pids.max", "cgroup.procs"))
        if memory is not None and pids is not None:
            found = CgroupHost(1, memory, pids, shell)
    if found is not None:
        for parent in {found.memory, found.pids}:
            _sweep(parent)
    return found
