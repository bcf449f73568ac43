"""The run's memory limit holds for every kind of memory: anonymous memory is covered by
test_escapes; here memory files, the tmpfs mounts (/tmp, /dev/shm) and a mapped file of the
scratch directory, each taken beyond the limit, are stopped and reported as `memory`, and four
runs at once hold no more than four limits' worth of the host's shared memory.

Each on both kinds of host: with a cgroup per run (the kernel counts; skipped where this machine
offers none) and without (the launcher counts, the tmpfs mounts fit within the limit, and the
seccomp filter refuses memory files).
"""

from __future__ import annotations

import asyncio
import os
import sys
import threading

import pytest

from maestrale.tools.code.bwrap import find_bwrap
from maestrale.tools.code.cgroups import PREFIX
from maestrale.tools.code.python_runtime import find_runtime
from maestrale.tools.code.runner import Sandbox, SandboxLimits, SandboxResult
from tests.tools.code.support import requires_bwrap

pytestmark = requires_bwrap

MIB = 1 << 20
# A low limit, so that going past it is quick; the scratch mounts and files may each be larger
# than the memory limit, as the host had them.
LIMITS = SandboxLimits(
    memory_bytes=64 * MIB,
    scratch_bytes=96 * MIB,
    file_bytes=256 * MIB,
    wall_seconds=20.0,
    cpu_seconds=10,
)
# Each writes up to 160 MiB (2.5 times the limit), then holds it.
FILL = """
import os, time
chunk = bytes(1 << 20)
{open}
for _ in range(160):
    {write}
print("HELD 160 MiB", flush=True)
time.sleep(30)
"""
ATTACKS = {
    "memfd": FILL.format(open='fd = os.memfd_create("big")', write="os.write(fd, chunk)"),
    "tmp": FILL.format(open='f = open("/tmp/big", "wb", buffering=0)', write="f.write(chunk)"),
    "dev-shm": FILL.format(
        open='f = open("/dev/shm/big", "wb", buffering=0)', write="f.write(chunk)"
    ),
    # One MiB mapped at a time (the whole file at once would be over the address-space limit).
    "mapped-file": FILL.format(
        open="import mmap\nfd = os.open('mapped', os.O_RDWR | os.O_CREAT)\n"
        "os.ftruncate(fd, 160 << 20)\nat = 0",
        write="m = mmap.mmap(fd, len(chunk), offset=at); m[:] = chunk; m.close(); at += len(chunk)",
    ),
}


@pytest.fixture(scope="module", params=["cgroup", "launcher"])
def sandbox(request: pytest.FixtureRequest) -> Sandbox:
    bwrap = find_bwrap("bwrap", 65534)
    runtime = find_runtime(sys.executable, site_packages=False)
    found = Sandbox(bwrap, runtime, kernel_limits=request.param == "cgroup")
    if request.param == "cgroup" and found.cgroups is None:
        pytest.skip("this machine offers no cgroup for the runs (see tools/code/cgroups.py)")
    return found


def shmem() -> int:
    """The host's shared memory (tmpfs, memory files), in bytes."""
    with open("/proc/meminfo", encoding="ascii") as meminfo:
        for line in meminfo:
            if line.startswith("Shmem:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no Shmem in /proc/meminfo")


def assert_stopped(sandbox: Sandbox, attack: str, result: SandboxResult) -> None:
    assert "HELD" not in result.stdout, (result.stdout, result.stderr)
    if attack == "memfd" and sandbox.cgroups is None:
        # Uncounted without a cgroup: refused outright by the seccomp filter.
        assert "PermissionError" in result.stderr and "memfd_create" in result.stderr
        assert result.limits == []
    else:
        assert result.limits[:1] == ["memory"], (result.limits, result.stderr)


@pytest.mark.parametrize("attack", sorted(ATTACKS))
async def test_memory_beyond_the_limit_is_stopped(sandbox: Sandbox, attack: str) -> None:
    result = await sandbox.run(ATTACKS[attack], LIMITS)
    assert_stopped(sandbox, attack, result)
    assert result.duration_ms < 15_000  # stopped, not left to the wall time


async def test_four_runs_at_once_hold_at_most_four_limits(sandbox: Sandbox) -> None:
    # Every way at once in each run, the next tried when one is stopped.
    code = "\n".join(
        f"try:\n    exec({ATTACKS[name]!r}.replace('time.sleep(30)', 'pass'))\n"
        "except (OSError, ValueError) as exc:\n    print(type(exc).__name__, exc)"
        for name in ("memfd", "dev-shm", "tmp", "mapped-file")
    )
    code += "\nimport time\ntime.sleep(30)"
    before = shmem()
    peak = before
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, shmem())
            done.wait(0.005)

    # Two of the runs on a second sandbox of the same process (as when two first requests find
    # the sandbox at once): their cgroups must not be named alike.
    twin = Sandbox(sandbox.bwrap, sandbox.runtime, kernel_limits=sandbox.cgroups is not None)
    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        results = await asyncio.gather(*(box.run(code, LIMITS) for box in [sandbox, twin] * 2))
    finally:
        done.set()
        sampler.join()
    for result in results:
        assert result.limits[:1] == ["memory"], (result.limits, result.stdout, result.stderr)
    # Other processes of the machine may hold a little more meanwhile: a 16 MiB margin.
    assert peak - before <= 4 * LIMITS.memory_bytes + 16 * MIB, (peak - before) / MIB
    if sandbox.cgroups is not None:  # the runs' cgroups are gone with them
        ours = f"{PREFIX}{os.getpid()}-"
        for parent in {sandbox.cgroups.memory, sandbox.cgroups.pids}:
            assert not [name for name in os.listdir(parent) if name.startswith(ours)]
