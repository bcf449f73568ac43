"""What the sandboxed code can reach of the server's process: descriptors and the launcher.

The server's descriptors: a socket and a pipe the server holds, inheritable as a listening socket
handed down by `serve --workers` or a pipe it inherited itself are, never reach the sandbox,
whichever event loop starts it (asyncio, or uvloop as the server runs); the live run under
`serve --workers 2` checks the supervisor's listening socket itself. The launcher (the sandbox's
pid 1, of the same uid as the code) can be neither traced nor opened through /proc.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvloop

from maestrale.tools.code.bwrap import find_bwrap
from maestrale.tools.code.python_runtime import find_runtime
from maestrale.tools.code.runner import Sandbox, SandboxLimits, SandboxResult
from tests.support.app_fixtures import API_KEY
from tests.support.live import start_server, stop_server
from tests.tools.code.support import requires_bwrap

pytestmark = requires_bwrap

# Every descriptor the code holds, with what it is.
LIST_DESCRIPTORS = """
import json, os
found = {}
for name in os.listdir("/proc/self/fd"):
    try:
        found[name] = os.readlink(f"/proc/self/fd/{name}")
    except OSError:
        pass  # the listing's own descriptor, closed since
print(json.dumps(found))
"""
LIMITS = SandboxLimits(wall_seconds=20.0, cpu_seconds=5)
LOOPS: dict[str, Callable[[], asyncio.AbstractEventLoop]] = {
    "asyncio": asyncio.new_event_loop,
    "uvloop": uvloop.new_event_loop,
}


@pytest.fixture(scope="module")
def sandbox() -> Sandbox:
    bwrap = find_bwrap("bwrap", 65534)
    return Sandbox(bwrap, find_runtime(sys.executable, site_packages=False))


@pytest.fixture
def held() -> Iterator[list[int]]:
    """A listening socket and a pipe of the server, inheritable."""
    listening = socket.socket()
    listening.bind(("127.0.0.1", 0))
    listening.listen(8)
    listening.set_inheritable(True)
    read, write = os.pipe()
    os.set_inheritable(read, True)
    yield [listening.fileno(), read]
    listening.close()
    os.close(read)
    os.close(write)


def descriptors_of(result: SandboxResult) -> dict[int, str]:
    assert result.exit_code == 0 and not result.limits, (result.stdout, result.stderr)
    return {int(fd): target for fd, target in json.loads(result.stdout).items()}


def assert_only_the_runs_own(found: dict[int, str]) -> None:
    """stdin (/dev/null), stdout and stderr, and the pipe the run's process reports a limit on:
    nothing of the server."""
    assert found[0] == "/dev/null"
    beyond = [target for fd, target in found.items() if fd > 2]
    assert len(beyond) == 1 and beyond[0].startswith("pipe:"), found


@pytest.mark.parametrize("loop", sorted(LOOPS))
def test_no_descriptor_of_the_server_reaches_the_code(
    sandbox: Sandbox, held: list[int], loop: str
) -> None:
    with asyncio.Runner(loop_factory=LOOPS[loop]) as runner:
        result = runner.run(sandbox.run(LIST_DESCRIPTORS, LIMITS))
    found = descriptors_of(result)
    assert_only_the_runs_own(found)
    for fd in held:
        assert fd not in found or found[fd] != os.readlink(f"/proc/self/fd/{fd}")


def test_the_launcher_cannot_be_traced_or_opened(sandbox: Sandbox) -> None:
    code = """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
if libc.ptrace(16, 1, 0, 0) == 0:  # PTRACE_ATTACH
    print("TRACED")
else:
    print("ptrace refused", os.strerror(ctypes.get_errno()))
for path in ("/proc/1/mem", "/proc/1/fd", "/proc/1/environ"):
    try:
        if path.endswith("fd"):
            print("OPENED", path, os.listdir(path))
        else:
            open(path, "rb").read(1)
            print("OPENED", path)
    except OSError as exc:
        print("refused", path, type(exc).__name__)
buffer = ctypes.create_string_buffer(8)
class Iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
local = Iovec(ctypes.addressof(buffer), 8)
remote = Iovec(0x400000, 8)
done = libc.process_vm_readv(1, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
print("process_vm_readv", "READ" if done >= 0 else os.strerror(ctypes.get_errno()))
"""
    result = asyncio.run(sandbox.run(code, LIMITS))
    assert result.exit_code == 0, result.stderr
    assert "TRACED" not in result.stdout and "OPENED" not in result.stdout, result.stdout
    assert "READ" not in result.stdout
    assert result.stdout.count("refused") == 4
    assert "process_vm_readv Operation not permitted" in result.stdout


def conversation_run(url: str, code: str) -> dict[str, Any]:
    """A code_interpreter run through the API (the echo model calls the tool)."""
    body = {
        "model": "maestrale-echo",
        "inputs": f"/call code_interpreter {json.dumps({'code': code})}",
        "tools": [{"type": "code_interpreter"}],
    }
    answer = httpx.post(
        f"{url}/v1/conversations",
        json=body,
        headers={"Authorization": f"Bearer {API_KEY}"},
        timeout=60,
    )
    assert answer.status_code == 200, answer.text
    execution = answer.json()["outputs"][0]
    assert execution["type"] == "tool.execution", execution
    info: dict[str, Any] = execution["info"]
    return info


def test_the_listening_socket_stays_out_of_the_sandbox_under_two_workers(tmp_path: Path) -> None:
    proc, url = start_server(tmp_path / "data", env={"MAESTRALE_WORKERS": "2"})
    try:
        for _ in range(2):  # each run lands on either process
            info = conversation_run(url, LIST_DESCRIPTORS)
            assert info["exit_code"] == 0, info
            assert_only_the_runs_own({int(k): v for k, v in json.loads(info["stdout"]).items()})
    finally:
        stop_server(proc)
