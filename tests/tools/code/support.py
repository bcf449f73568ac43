"""What the code_interpreter tests share: the skip when bubblewrap is absent, tool contexts with
test limits, and the processes a run could leave behind."""

from __future__ import annotations

import dataclasses
import os
import shutil
from typing import Any

import pytest

from maestrale.conversations.server_tools import ToolOutcome
from maestrale.core.auth.principal import Tenant
from maestrale.services import Services
from maestrale.tools.base import ToolContext
from maestrale.tools.code import CodeInterpreter

requires_bwrap = pytest.mark.skipif(
    shutil.which("bwrap") is None,
    reason="bubblewrap (bwrap) is not installed: the code_interpreter sandbox needs Debian's "
    "`bubblewrap` package (apt-get install bubblewrap)",
)

# Small limits, so that each escape is stopped quickly; wall times leave room for a loaded
# machine.
TEST_LIMITS: dict[str, Any] = {
    "code_interpreter_cpu_seconds": 1,
    "code_interpreter_wall_seconds": 20.0,
    "code_interpreter_memory_bytes": 256 * 1024 * 1024,
    "code_interpreter_processes": 16,
    "code_interpreter_file_bytes": 16 * 1024 * 1024,
    "code_interpreter_scratch_bytes": 32 * 1024 * 1024,
    "code_interpreter_output_bytes": 16 * 1024,
}


def context(services: Services, tenant: Tenant, **settings: Any) -> ToolContext:
    """A code_interpreter context whose services carry the test limits changed by `settings`."""
    changed = services.settings.model_copy(update={**TEST_LIMITS, **settings})
    return ToolContext(
        tenant, dataclasses.replace(services, settings=changed), {"type": "code_interpreter"}
    )


async def run(
    tool: CodeInterpreter, services: Services, tenant: Tenant, code: str, **settings: Any
) -> ToolOutcome:
    return await tool.run(context(services, tenant, **settings), {"code": code})


# The commands a sandbox is started with (the process names its processes descend from).
SANDBOX_NAMES = frozenset({b"bwrap", b"setpriv"})


def descendants(pid: int | None = None) -> list[int]:
    """The sandbox processes descending from `pid` (this process by default): bwrap, the
    `setpriv` that starts it, and everything below them. Other children of the test process
    (servers of session fixtures) are not the sandbox's."""
    root = os.getpid() if pid is None else pid
    parents: dict[int, int] = {}
    names: dict[int, bytes] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as stat:
                head, tail = stat.read().rsplit(b")", 1)
        except (OSError, ValueError):
            continue
        parents[int(name)] = int(tail.split()[1])
        names[int(name)] = head.split(b"(", 1)[-1]
    found: list[int] = []
    for child in parents:
        chain = [child]
        ancestor = parents.get(child)
        while ancestor is not None and ancestor > 1 and ancestor != root:
            chain.append(ancestor)
            ancestor = parents.get(ancestor)
        if ancestor == root and any(names.get(p) in SANDBOX_NAMES for p in chain):
            found.append(child)
    return found
