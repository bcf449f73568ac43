"""code_interpreter's ordinary runs: what the code prints and its exit status, exceptions, the
files it writes coming back as Files API files of the caller's workspace only, the limits on
returned files, and a run stopped from outside or cancelled leaving nothing behind."""

from __future__ import annotations

import asyncio
import json

import pytest
from fastapi import FastAPI

from maestrale.core.auth.principal import Tenant
from maestrale.services import Services
from maestrale.tools.code import CodeInterpreter, runner
from tests.support.app_fixtures import TenantKey, make_client
from tests.tools.code.support import context, descendants, requires_bwrap, run

pytestmark = requires_bwrap


@pytest.fixture(scope="module")
def tool() -> CodeInterpreter:
    return CodeInterpreter()


@pytest.fixture
def services(app: FastAPI) -> Services:
    services: Services = app.state.services
    return services


async def test_a_run_prints(tool: CodeInterpreter, services: Services, tenant: Tenant) -> None:
    code = "import sys\nprint('hello', 6 * 7)\nprint('careful', file=sys.stderr)"
    outcome = await run(tool, services, tenant, code)
    assert outcome.error is None
    assert outcome.output == "exit status: 0\nstdout:\nhello 42\nstderr:\ncareful"
    info = outcome.info
    assert info["code"] == code
    assert (info["stdout"], info["stderr"]) == ("hello 42\n", "careful\n")
    assert info["exit_code"] == 0 and info["limit"] is None and info["limits"] == []
    assert isinstance(info["duration_ms"], int)
    assert outcome.files == [] and outcome.references == []


async def test_an_exception_is_the_models_to_read(
    tool: CodeInterpreter, services: Services, tenant: Tenant
) -> None:
    outcome = await run(tool, services, tenant, "print('before')\n{}['missing']")
    assert outcome.error is None  # the tool worked: the code failed
    assert outcome.info["exit_code"] == 1
    assert "before" in outcome.output
    stderr = outcome.info["stderr"]
    assert 'File "/code/main.py", line 2, in <module>' in stderr
    assert "KeyError: 'missing'" in stderr
    assert "<string>" not in stderr  # the launcher's frames are not shown


@pytest.mark.parametrize(
    ("code", "status", "stderr"),
    [
        ("import sys\nsys.exit(3)", 3, ""),
        ("raise SystemExit('bye')", 1, "bye\n"),
        ("def broken(:\n    pass", 1, "SyntaxError"),
        ("import os, signal\nos.kill(os.getpid(), signal.SIGTERM)", -15, ""),
    ],
)
async def test_exit_statuses(
    tool: CodeInterpreter,
    services: Services,
    tenant: Tenant,
    code: str,
    status: int,
    stderr: str,
) -> None:
    outcome = await run(tool, services, tenant, code)
    assert outcome.error is None
    assert outcome.info["exit_code"] == status
    assert stderr in outcome.info["stderr"]
    assert outcome.output.startswith(f"exit status: {status}\n")


async def test_the_installed_libraries_are_there(
    tool: CodeInterpreter, services: Services, tenant: Tenant
) -> None:
    code = "import numpy as np\nprint(int(np.arange(10).sum()))\nimport json, sqlite3, ssl"
    outcome = await run(tool, services, tenant, code)
    assert outcome.error is None, outcome.output
    assert outcome.info["stdout"] == "45\n"


async def test_produced_files_are_files_of_the_workspace_only(
    tool: CodeInterpreter,
    services: Services,
    tenant: Tenant,
    app: FastAPI,
    other: TenantKey,
) -> None:
    code = """
import json, os
os.makedirs("plots")
with open("plots/data.json", "w") as f:
    json.dump({"answer": 42}, f)
with open("report.csv", "w") as f:
    f.write("a,b\\n1,2\\n")
open(".hidden", "w").write("not returned")
os.symlink("/code/main.py", "link.py")
print("done")
"""
    outcome = await run(tool, services, tenant, code)
    assert outcome.error is None, outcome.output
    assert [f["file_name"] for f in outcome.files] == ["data.json", "report.csv"]
    assert [f["file_type"] for f in outcome.files] == ["json", "csv"]
    assert all(f["type"] == "tool_file" and f["tool"] == "code_interpreter" for f in outcome.files)
    stored = outcome.info["files"]
    assert [f["path"] for f in stored] == ["plots/data.json", "report.csv"]
    for chunk in outcome.files:
        assert chunk["file_id"] in outcome.output
    data_id, csv_id = (f["file_id"] for f in outcome.files)
    async with make_client(app) as client:
        got = await client.get(f"/v1/files/{data_id}")
        assert got.status_code == 200, got.text
        assert got.json()["filename"] == "data.json"
        assert got.json()["mimetype"] == "application/json"
        assert got.json()["bytes"] == len(json.dumps({"answer": 42}))
        content = await client.get(
            f"/v1/files/{csv_id}/content", headers={"Accept": "application/octet-stream"}
        )
        assert content.status_code == 200 and content.content == b"a,b\n1,2\n"
    async with make_client(app, other.key) as theirs:
        for file_id in (data_id, csv_id):
            assert (await theirs.get(f"/v1/files/{file_id}")).status_code == 404
            assert (await theirs.get(f"/v1/files/{file_id}/content")).status_code == 404
        listed = await theirs.get("/v1/files")
        assert listed.json()["total"] == 0


async def test_returned_files_are_limited(
    tool: CodeInterpreter, services: Services, tenant: Tenant
) -> None:
    code = """
for n in range(5):
    open(f"small{n}.txt", "w").write("x")
open("large.bin", "wb").write(bytes(2048))
"""
    outcome = await run(
        tool,
        services,
        tenant,
        code,
        code_interpreter_max_files=3,
        code_interpreter_files_bytes=1024,
    )
    assert outcome.error is None, outcome.output
    assert [f["file_name"] for f in outcome.files] == ["small0.txt", "small1.txt", "small2.txt"]
    assert "file 'large.bin' not returned" in outcome.output
    assert "file 'small4.txt' not returned (too many files)" in outcome.output


async def test_files_of_a_run_that_hit_a_limit_are_not_kept(
    tool: CodeInterpreter, services: Services, tenant: Tenant, app: FastAPI
) -> None:
    code = "open('partial.txt', 'w').write('x')\nx = bytearray(10 * 1024**3)"
    outcome = await run(tool, services, tenant, code)
    assert outcome.info["limit"] == "memory"
    assert outcome.files == [] and "the files it wrote are not kept" in outcome.output
    async with make_client(app) as client:
        assert (await client.get("/v1/files")).json()["total"] == 0


async def test_a_run_stopped_from_outside_leaves_nothing(
    tool: CodeInterpreter,
    services: Services,
    tenant: Tenant,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The server's own deadline, here before the launcher's: as if the launcher were stuck.
    monkeypatch.setattr(runner, "GRACE_SECONDS", -9.0)
    code = "import time\nprint('x' * 200000)\ntime.sleep(3600)"
    outcome = await run(
        tool,
        services,
        tenant,
        code,
        code_interpreter_wall_seconds=10.0,
        code_interpreter_output_bytes=1024 * 1024,
    )
    assert outcome.info["limits"] == ["wall_time"]
    assert outcome.info["exit_code"] is None
    assert outcome.error is not None
    assert descendants() == []


async def test_a_cancelled_run_leaves_nothing(
    tool: CodeInterpreter, services: Services, tenant: Tenant
) -> None:
    code = "import os, time\nfor _ in range(4):\n    os.fork()\ntime.sleep(3600)"
    task = asyncio.create_task(run(tool, services, tenant, code))
    await asyncio.sleep(1.0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert descendants() == []


async def test_bad_arguments(tool: CodeInterpreter, services: Services, tenant: Tenant) -> None:
    ctx = context(services, tenant)
    for arguments in ({}, {"code": ""}, {"code": 42}, {"code": "x" * 200_001}):
        outcome = await tool.run(ctx, arguments)
        assert outcome.error is not None and "`code`" in outcome.error
