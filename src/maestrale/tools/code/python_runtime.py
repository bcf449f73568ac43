"""The Python runtime a sandbox sees: the interpreter, its standard library and the shared
libraries they load, bound read-only at their own paths (the symbolic links on the way, such as
Debian's `/lib -> usr/lib`, recreated), and optionally its site-packages, bound read-only at
neutral paths with the server's own package hidden. Nothing else of the host is bound.

What in a site-packages directory names host paths is emptied: the `.pth` files (an editable
install's names the project's source directory; the launcher never runs them), an editable
install's `__editable__` finders, and the `direct_url.json` of what was installed from a local
directory or a URL; the server's own distribution (its `.dist-info`) is hidden with its package.

The runtime is found by asking the interpreter (`-I`: no environment, no user site) for its
paths, and `ldd` for the libraries of the interpreter and of its extension modules.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import PurePosixPath

# Where the site-packages directories are bound inside the sandbox (a suffix for the 2nd, ...).
SITE_MOUNT = "/opt/python/site-packages"
# Packages of a site-packages directory hidden inside the sandbox (the server's own code).
HIDDEN_PACKAGES = ("maestrale",)
# What an emptied file of site-packages is bound to.
EMPTY = "/dev/null"
# Library directories bound when `ldd` is missing.
FALLBACK_LIBRARY_DIRS = ("/lib", "/lib64", "/usr/lib", "/usr/lib64")

_DISCOVER = """
import json, os, site, sys
sites = [os.path.realpath(p) for p in site.getsitepackages() if os.path.isdir(p)]
runtime = []
for entry in sys.path:
    if not entry or os.path.realpath(entry) in sites:
        break
    runtime.append(entry)
print(json.dumps({
    "executable": os.path.realpath(sys.executable),
    "runtime": runtime,
    "site": sites,
    "version": "%d.%d.%d" % sys.version_info[:3],
}))
"""


class RuntimeNotFound(Exception):
    """The configured interpreter cannot be used in a sandbox (the reason is the message)."""


@dataclass(frozen=True, slots=True)
class PythonRuntime:
    """What of the host a sandbox binds to run Python."""

    executable: str  # the interpreter's real path (also its path inside)
    version: str
    # bwrap arguments: the read-only binds and symbolic links of the runtime.
    mounts: tuple[str, ...]
    # The site-packages directories inside the sandbox (empty when they are not bound).
    site_dirs: tuple[str, ...] = field(default_factory=tuple)


class _Mounts:
    """Builds the binds and links that make host paths resolve inside the sandbox as they do
    outside: a path's symbolic links are recreated, the real file or directory bound."""

    def __init__(self) -> None:
        self.binds: dict[str, str] = {}  # destination -> host source
        self.links: dict[str, str] = {}  # path -> link target (as read)
        self.dirs: set[str] = set()  # destinations that are directories

    def expose(self, path: str, depth: int = 0) -> None:
        if depth > 40:  # a loop of links
            raise RuntimeNotFound(f"too many symbolic links resolving {path}")
        parts = PurePosixPath(os.path.normpath(path)).parts[1:]
        current = "/"
        for index, part in enumerate(parts):
            candidate = os.path.join(current, part)
            if os.path.islink(candidate):
                target = os.readlink(candidate)
                self.links.setdefault(candidate, target)
                resolved = os.path.normpath(os.path.join(current, target))
                self.expose(os.path.join(resolved, *parts[index + 1 :]), depth + 1)
                return
            current = candidate
        if not os.path.exists(current):
            return
        self.binds.setdefault(current, current)
        if os.path.isdir(current):
            self.dirs.add(current)

    def _covered(self, path: str) -> bool:
        """Whether a bound directory above `path` already shows it (with the host's content)."""
        parent = os.path.dirname(path)
        while parent != "/":
            if parent in self.dirs and self.binds.get(parent) == parent:
                return True
            parent = os.path.dirname(parent)
        return False

    def arguments(self) -> list[str]:
        args: list[str] = []
        for dest in sorted(self.binds, key=lambda p: (p.count("/"), p)):
            if dest == self.binds[dest] and self._covered(dest):
                continue
            args += ["--ro-bind", self.binds[dest], dest]
        for path in sorted(self.links):
            if not self._covered(path) and path not in self.binds:
                args += ["--symlink", self.links[path], path]
        return args


def _discover(python: str) -> tuple[str, str, list[str], list[str]]:
    """(the interpreter's real path, its version, its runtime's directories, its site-packages
    directories)."""
    try:
        done = subprocess.run(
            [python, "-I", "-c", _DISCOVER],
            capture_output=True,
            timeout=30,
            env={"PATH": os.defpath, "LC_ALL": "C.UTF-8"},
            cwd="/",
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise RuntimeNotFound(f"the interpreter {python} could not be run: {exc}") from exc
    if done.returncode != 0:
        reason = done.stderr.decode(errors="replace").strip()[-300:]
        raise RuntimeNotFound(f"the interpreter {python} failed: {reason}")
    try:
        found = json.loads(done.stdout)
        return (
            str(found["executable"]),
            str(found["version"]),
            [str(p) for p in found["runtime"]],
            [str(p) for p in found["site"]],
        )
    except (ValueError, KeyError, TypeError) as exc:
        raise RuntimeNotFound(f"the interpreter {python} answered no paths") from exc


def _libraries(files: Iterable[str]) -> tuple[set[str], set[str]] | None:
    """(the directories of the shared libraries `files` load, the dynamic loaders they name),
    from `ldd`; None without `ldd`."""
    files = list(files)
    try:
        done = subprocess.run(
            ["ldd", *files],
            capture_output=True,
            timeout=60,
            env={"PATH": os.defpath, "LC_ALL": "C"},
            cwd="/",
        )
    except FileNotFoundError:
        return None
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise RuntimeNotFound(f"ldd failed: {exc}") from exc
    dirs: set[str] = set()
    loaders: set[str] = set()
    for line in done.stdout.decode(errors="replace").splitlines():
        line = line.strip()
        if "=>" in line:
            target = line.split("=>", 1)[1].strip().split(" (", 1)[0].strip()
            if target.startswith("/"):
                dirs.add(os.path.dirname(target))
        elif line.startswith("/"):
            loaders.add(line.split(" (", 1)[0].strip())
    return dirs, loaders


def _extensions(dirs: Iterable[str]) -> list[str]:
    found: list[str] = []
    for directory in dirs:
        if not os.path.isdir(directory):
            continue
        for entry in os.scandir(directory):
            if entry.name.endswith(".so") and entry.is_file():
                found.append(entry.path)
    return found


def _hidden(directory: str, inside: str) -> list[str]:
    """bwrap arguments that hide, in the site-packages `directory` bound at `inside`, the server's
    packages and distributions and empty the files that name host paths."""
    args: list[str] = []
    distributions = tuple(f"{package}-" for package in HIDDEN_PACKAGES)
    for entry in sorted(os.scandir(directory), key=lambda e: e.name):
        name = entry.name
        if entry.is_dir(follow_symlinks=False):
            if name in HIDDEN_PACKAGES or (
                name.endswith(".dist-info") and name.startswith(distributions)
            ):
                args += ["--tmpfs", f"{inside}/{name}", "--remount-ro", f"{inside}/{name}"]
            elif name.endswith(".dist-info") and os.path.isfile(
                os.path.join(entry.path, "direct_url.json")
            ):
                args += ["--ro-bind", EMPTY, f"{inside}/{name}/direct_url.json"]
        elif name.endswith(".pth") or name.startswith("__editable__"):
            args += ["--ro-bind", EMPTY, f"{inside}/{name}"]
    return args


def find_runtime(python: str, *, site_packages: bool) -> PythonRuntime:
    """The runtime of the interpreter `python` (a path or a name on PATH), its site-packages
    bound when `site_packages`; raises RuntimeNotFound with the reason it cannot be used."""
    executable, version, runtime, sites = _discover(python)
    mounts = _Mounts()
    mounts.expose(executable)
    for directory in runtime:
        mounts.expose(directory)
    libraries = _libraries([executable, *_extensions(runtime)])
    if libraries is None:
        for directory in FALLBACK_LIBRARY_DIRS:
            mounts.expose(directory)
    else:
        dirs, loaders = libraries
        for directory in sorted(dirs):
            mounts.expose(directory)
        for loader in sorted(loaders):
            mounts.expose(loader)
    args = mounts.arguments()
    site_dirs: list[str] = []
    if site_packages:
        for index, directory in enumerate(sites):
            inside = SITE_MOUNT if index == 0 else f"{SITE_MOUNT}-{index + 1}"
            args += ["--ro-bind", directory, inside]
            args += _hidden(directory, inside)
            site_dirs.append(inside)
    return PythonRuntime(
        executable=executable,
        version=version,
        mounts=tuple(args),
        site_dirs=tuple(site_dirs),
    )
