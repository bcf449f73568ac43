"""Bubblewrap (`bwrap`, Debian's `bubblewrap`): found, checked once, and the command line of a
sandbox.

Every sandbox gets new user, pid, network, ipc, uts and (where possible) cgroup namespaces, no
capabilities, a fresh /proc and a minimal /dev, a read-only root holding only the Python runtime
(see `python_runtime.py`), size-limited tmpfs mounts for the scratch directory, /tmp and
/dev/shm, and an empty environment, and the seccomp filter of `seccomp.py` (`--seccomp`). bwrap
runs with an empty environment too: its own process is the sandbox's pid 1, whose
/proc/1/environ the code could otherwise read.

RLIMIT_NPROC does not hold for processes of the host's root (the kernel exempts uid 0 whatever
the user namespace): a server running as root starts bwrap as an unprivileged uid
(`code_interpreter_sandbox_uid`, `nobody` by default), so that the limit holds, counted in the
sandbox's own user namespace (per sandbox, not per host user).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from typing import Any

from maestrale.tools.code.python_runtime import PythonRuntime

# bwrap 0.8 brought `--size` (a size-limited tmpfs) and `--disable-userns`.
MIN_VERSION = (0, 8, 0)
SANDBOX_UID = 1000  # the run's uid and gid inside the sandbox
SCRATCH = "/sandbox"
CODE_PATH = "/code/main.py"
# What bwrap itself runs with: nothing of the server's environment.
BWRAP_ENV = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL": "C"}
SANDBOX_ENV = {
    "HOME": "/tmp",
    "TMPDIR": "/tmp",
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "LANG": "C.UTF-8",
    "PYTHONDONTWRITEBYTECODE": "1",
    # One thread per numerical library: threads count against the process limit.
    "OPENBLAS_NUM_THREADS": "1",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "NUMEXPR_NUM_THREADS": "1",
    "MPLBACKEND": "Agg",
}
NOT_FOUND = (
    "bubblewrap (bwrap) is not installed: install Debian's `bubblewrap` package "
    "(apt-get install bubblewrap), or set MAESTRALE_CODE_INTERPRETER_BWRAP to its path"
)
NO_NAMESPACES = (
    "; the kernel must allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone"
    "=1 and user.max_user_namespaces > 0; on Ubuntu, AppArmor's bwrap profile), and a container"
    " must let them be created (e.g. Docker's default seccomp profile does not)"
)


class SandboxUnavailable(Exception):
    """This server cannot run sandboxes (the reason, for an operator, is the message)."""


@dataclass(frozen=True, slots=True)
class Bubblewrap:
    path: str
    version: tuple[int, ...]
    # The uid and gid bwrap is started as (the server runs as root), or None: the server's own.
    run_as: int | None = None
    # util-linux's setpriv, which switches to `run_as` before bwrap starts (else the subprocess
    # does, which costs a full fork of the server's process instead of a vfork).
    setpriv: str | None = None

    def prefix(self) -> list[str]:
        """What comes before bwrap's command line."""
        if self.run_as is None or self.setpriv is None:
            return [self.path]
        uid = str(self.run_as)
        switch = [f"--reuid={uid}", f"--regid={uid}", "--clear-groups"]
        return [self.setpriv, *switch, "--", self.path]

    def spawn_options(self) -> dict[str, Any]:
        """The subprocess options that start it (as `run_as`, without setpriv)."""
        options: dict[str, Any] = {"env": dict(BWRAP_ENV), "cwd": "/"}
        if self.run_as is not None and self.setpriv is None:
            options.update(user=self.run_as, group=self.run_as, extra_groups=[])
        return options


def parse_version(text: str) -> tuple[int, ...] | None:
    found = re.search(r"(\d+)\.(\d+)(?:\.(\d+))?", text)
    if found is None:
        return None
    return tuple(int(part or 0) for part in found.groups())


def find_bwrap(name: str, sandbox_uid: int) -> Bubblewrap:
    """bwrap by name or path, recent enough; raises SandboxUnavailable with the reason."""
    path = shutil.which(name)
    if path is None:
        raise SandboxUnavailable(NOT_FOUND)
    try:
        done = subprocess.run(
            [path, "--version"], capture_output=True, timeout=10, env=BWRAP_ENV, cwd="/"
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SandboxUnavailable(f"{path} could not be run: {exc}") from exc
    version = parse_version(done.stdout.decode(errors="replace"))
    if version is None:
        raise SandboxUnavailable(f"{path} is not bubblewrap (no version in `{path} --version`)")
    if version < MIN_VERSION:
        found = ".".join(map(str, version))
        raise SandboxUnavailable(
            f"bubblewrap {found} is too old: 0.8 or later is needed (a size-limited scratch "
            "tmpfs, no nested user namespaces)"
        )
    if os.geteuid() != 0:
        return Bubblewrap(path, version)
    return Bubblewrap(path, version, sandbox_uid, shutil.which("setpriv"))


def isolation(scratch_bytes: int) -> list[str]:
    """The namespaces, the fresh /proc, /dev and tmpfs mounts, and the environment (the runtime's
    binds come before, the read-only remounts after)."""
    size = str(scratch_bytes)
    args = [
        "--unshare-user",
        "--unshare-pid",
        "--as-pid-1",
        "--unshare-net",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--disable-userns",
        "--die-with-parent",
        "--new-session",
        "--cap-drop",
        "ALL",
        "--uid",
        str(SANDBOX_UID),
        "--gid",
        str(SANDBOX_UID),
        "--hostname",
        "sandbox",
        "--clearenv",
    ]
    for key, value in SANDBOX_ENV.items():
        args += ["--setenv", key, value]
    args += ["--proc", "/proc", "--dev", "/dev"]
    for mount in (SCRATCH, "/tmp", "/dev/shm"):
        args += ["--size", size, "--tmpfs", mount]
    return args


def command(
    bwrap: Bubblewrap,
    runtime: PythonRuntime,
    scratch_bytes: int,
    *,
    code_fd: int | None,
    argv: list[str],
    seccomp_fd: int | None = None,
) -> list[str]:
    """The bwrap command line of a sandbox running `argv` (after the interpreter) in the scratch
    directory, with the code read from `code_fd` at CODE_PATH, under the seccomp filter read
    from `seccomp_fd`."""
    args = [*bwrap.prefix(), *isolation(scratch_bytes), *runtime.mounts]
    executable = runtime.executable
    for alias in ("/usr/local/bin/python3", "/usr/local/bin/python"):
        if alias != executable:
            args += ["--symlink", executable, alias]
    if code_fd is not None:
        args += ["--ro-bind-data", str(code_fd), CODE_PATH]
    if seccomp_fd is not None:
        args += ["--seccomp", str(seccomp_fd)]
    args += ["--remount-ro", "/dev", "--remount-ro", "/", "--chdir", SCRATCH]
    return [*args, "--", executable, *argv]


def probe(bwrap: Bubblewrap, runtime: PythonRuntime) -> None:
    """Start a sandbox once (the namespaces, the runtime's binds, the interpreter); raises
    SandboxUnavailable with bwrap's own words when it cannot."""
    argv = ["-I", "-S", "-c", "import os; print(os.getuid())"]
    cmd = command(bwrap, runtime, 1 << 20, code_fd=None, argv=argv)
    try:
        done = subprocess.run(cmd, capture_output=True, timeout=30, **bwrap.spawn_options())
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SandboxUnavailable(f"bubblewrap could not be started: {exc}") from exc
    if done.returncode == 0 and done.stdout.strip() == str(SANDBOX_UID).encode():
        return
    said = done.stderr.decode(errors="replace").strip()[-500:] or f"exit status {done.returncode}"
    as_uid = f" (run as uid {bwrap.run_as})" if bwrap.run_as is not None else ""
    if "namespace" in said.lower():
        hint = NO_NAMESPACES
    elif bwrap.run_as is not None and "permission denied" in said.lower():
        hint = (
            f"; uid {bwrap.run_as} (MAESTRALE_CODE_INTERPRETER_SANDBOX_UID) must be able to read"
            " bwrap and the Python runtime"
        )
    else:
        hint = ""
    raise SandboxUnavailable(f"bubblewrap{as_uid} cannot create a sandbox: {said}{hint}")
