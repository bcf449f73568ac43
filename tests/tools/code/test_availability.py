"""When this server cannot run sandboxes, code_interpreter says why (and what to install or
configure): bwrap missing, too old, or unable to create namespaces; the tool switched off."""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi import FastAPI

from maestrale.conversations.server_tools import ToolUnavailable
from maestrale.core.auth.principal import Tenant
from maestrale.services import Services
from maestrale.tools.code import CodeInterpreter
from maestrale.tools.toolboxes import BuiltinToolboxes
from tests.tools.code.support import context, requires_bwrap


@pytest.fixture
def backend() -> str:
    return "sqlite"


@pytest.fixture
def services(app: FastAPI) -> Services:
    services: Services = app.state.services
    return services


@pytest.fixture
def scripts() -> Iterator[Path]:
    """A directory the sandbox's uid can reach too (bwrap is started as `nobody` by root)."""
    with tempfile.TemporaryDirectory(prefix="fake-bwrap-") as directory:
        os.chmod(directory, 0o755)
        yield Path(directory)


def fake_bwrap(directory: Path, script: str) -> str:
    path = directory / "bwrap"
    path.write_text("#!/bin/sh\n" + script)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return str(path)


def reason(services: Services, tenant: Tenant, **settings: object) -> str | None:
    return CodeInterpreter().unavailable(context(services, tenant, **settings).services.settings)


async def test_a_missing_bwrap_is_named(services: Services, tenant: Tenant) -> None:
    found = reason(services, tenant, code_interpreter_bwrap="/nonexistent/bwrap")
    assert found is not None
    assert "bubblewrap (bwrap) is not installed" in found and "apt-get install bubblewrap" in found


async def test_an_old_bwrap_is_refused(services: Services, tenant: Tenant, scripts: Path) -> None:
    path = fake_bwrap(scripts, 'echo "bubblewrap 0.6.1"\n')
    found = reason(services, tenant, code_interpreter_bwrap=path)
    assert found is not None and "0.6.1 is too old" in found


async def test_a_bwrap_without_namespaces_is_explained(
    services: Services, tenant: Tenant, scripts: Path
) -> None:
    script = (
        'if [ "$1" = --version ]; then echo "bubblewrap 0.8.0"; exit 0; fi\n'
        'echo "bwrap: No permissions to creating new namespace" >&2; exit 1\n'
    )
    path = fake_bwrap(scripts, script)
    found = reason(services, tenant, code_interpreter_bwrap=path)
    assert found is not None
    assert "No permissions to creating new namespace" in found
    assert "unprivileged user namespaces" in found


async def test_a_disabled_tool_is_unavailable(services: Services, tenant: Tenant) -> None:
    found = reason(services, tenant, code_interpreter_enabled=False)
    assert found is not None and "MAESTRALE_CODE_INTERPRETER_ENABLED" in found
    outcome = await CodeInterpreter().run(
        context(services, tenant, code_interpreter_enabled=False), {"code": "print(1)"}
    )
    assert outcome.error is not None


async def test_an_unavailable_sandbox_refuses_the_request(
    services: Services, tenant: Tenant
) -> None:
    changed = context(services, tenant, code_interpreter_bwrap="/nonexistent/bwrap").services
    factory = BuiltinToolboxes(changed, {"code_interpreter": CodeInterpreter()})
    async with services.db.transaction() as work:
        with pytest.raises(ToolUnavailable) as raised:
            await factory.build(work, tenant, [{"type": "code_interpreter"}])
    assert "bubblewrap" in raised.value.message


@requires_bwrap
async def test_the_tool_is_offered_where_bwrap_works(services: Services, tenant: Tenant) -> None:
    tool = CodeInterpreter()
    assert tool.unavailable(context(services, tenant).services.settings) is None
    offered = tool.offer({"type": "code_interpreter"})
    assert offered.name == "code_interpreter"
    assert offered.parameters["required"] == ["code"]
