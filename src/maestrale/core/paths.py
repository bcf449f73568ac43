"""Directories that hold prompts, files and keys: private to the account that runs Maestrale."""

from __future__ import annotations

import logging
import stat
from pathlib import Path

log = logging.getLogger("maestrale")

PRIVATE_MODE = 0o700


class DirectoryNotPrivate(RuntimeError):
    """A directory others can read, whose mode Maestrale cannot change."""


def private_dir(path: Path, what: str = "data directory") -> None:
    """Create `path` with mode 0700, or make an existing one 0700 (logged): a directory made by
    hand, or by a process with a loose umask, must not leave prompts and files readable by every
    account of the machine. Raise `DirectoryNotPrivate` when the mode cannot be changed."""
    path.mkdir(mode=PRIVATE_MODE, parents=True, exist_ok=True)
    mode = stat.S_IMODE(path.stat().st_mode)
    if not mode & 0o077:
        return
    try:
        path.chmod(PRIVATE_MODE)
    except OSError as exc:
        raise DirectoryNotPrivate(
            f"the {what} {path} is open to other accounts (mode {mode:04o}) and its mode cannot "
            f"be set to 0700 ({exc.strerror}): fix its mode or owner, or choose another directory"
        ) from exc
    log.warning("the %s %s was open to other accounts (mode %04o): set to 0700", what, path, mode)
