"""code_interpreter's run slots are shared between workspaces: one flooding workspace leaves a
slot to the others, and a run that waits too long for one fails with a clear error."""

from __future__ import annotations

import asyncio

import pytest
from fastapi import FastAPI

from maestrale.core.auth.principal import Tenant
from maestrale.services import Services
from maestrale.tools.code import CodeInterpreter
from tests.tools.code.support import requires_bwrap, run

pytestmark = requires_bwrap

SLEEP = "import time\ntime.sleep(1.5)\nprint('slept')"


@pytest.fixture
def services(app: FastAPI) -> Services:
    services: Services = app.state.services
    return services


@pytest.fixture
async def tool(services: Services) -> CodeInterpreter:
    tool = CodeInterpreter()
    # As at the server's start: the runs below start together and share one sandbox.
    assert await tool.prepare(services.settings) is None
    return tool


async def test_a_flooding_workspace_leaves_a_slot_to_another(
    tool: CodeInterpreter, services: Services, tenant: Tenant
) -> None:
    flooder = Tenant(tenant.organization_id, "workspace-b")
    settings = {"code_interpreter_concurrency": 2, "code_interpreter_concurrency_per_workspace": 1}
    finished: list[str] = []

    async def call(who: Tenant, label: str, code: str) -> None:
        outcome = await run(tool, services, who, code, **settings)
        assert outcome.error is None, outcome.error
        finished.append(label)

    floods = [asyncio.create_task(call(flooder, f"b{i}", SLEEP)) for i in range(3)]
    await asyncio.sleep(0.05)  # B's three runs asked first
    await call(tenant, "a", "print('a')")
    await asyncio.gather(*floods)
    # First come first served, B's first two runs held both slots and A ran after them.
    assert finished[0] == "a" and sorted(finished[1:]) == ["b0", "b1", "b2"]


async def test_a_run_waiting_past_the_queue_time_out_fails_clearly(
    tool: CodeInterpreter, services: Services, tenant: Tenant
) -> None:
    settings = {"code_interpreter_concurrency": 1, "code_interpreter_queue_seconds": 0.3}
    other = Tenant(tenant.organization_id, "workspace-b")
    busy = asyncio.create_task(run(tool, services, other, SLEEP, **settings))
    await asyncio.sleep(0.05)
    outcome = await run(tool, services, tenant, "print('a')", **settings)
    assert outcome.error is not None
    assert "the sandbox is busy: no run slot was free within 0.3 s" in outcome.error
    assert (await busy).error is None
