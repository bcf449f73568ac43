"""What the two in-process fuzzers of the API share: the schema fuzz of `/openapi.json`
(tests/conformance/test_schema_fuzz.py) and the hostile JSON sent to every JSON route
(tests/core/test_hostile_json_fuzz.py): the app's settings, the key each path takes, the
operations left out, the requests never sent, and Hypothesis' budget."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, settings

from maestrale.config import Settings
from tests.support.app_fixtures import ADMIN_KEY, API_KEY
from tests.support.app_fixtures import test_settings as make_settings
from tests.support.tiers import ci_tier_runs

# Streams that follow events for as long as the client stays: they never end with an answer.
ENDLESS = frozenset(
    {
        "/v1/workflows/events/stream",
        "/v1/workflows/executions/{execution_id}/stream",
        "/v1/workflows/executions/{execution_id}/logs/stream",
        "/v1/workflows/deployments/{name}/logs/stream",
    }
)

# The builtin engine's directives: `/sleep MS` waits (up to 60 s) and `/fail STATUS` answers as a
# failing upstream would, a 5xx on purpose. A generated body that names one is not sent.
DIRECTIVE = re.compile(r"/(?:sleep|fail)\b")


def fuzz_settings(
    database_url: str, data_dir: Path, temporal_address: str | None = None, **overrides: Any
) -> Settings:
    return make_settings(
        database_url,
        data_dir,
        temporal_address=temporal_address,
        # An execute-and-wait of a generated input returns within a second (still RUNNING);
        # queries and updates of the seeded execution get the worker's answer.
        workflow_max_wait_seconds=1.0,
        workflow_wait_seconds=10.0,
        # Generated URLs (OCR documents, audio) are fetched for real: fail them fast.
        fetch_timeout_seconds=2.0,
        # Builtin embeddings for similar events: the default model is a local one.
        similar_events_model="maestrale-embed",
        # The seeded chat completion event is written at once.
        accounting_flush_seconds=0.05,
        # The seeded connector's MCP server listens on the loopback interface; generated
        # servers are reached for real: fail them fast.
        connector_allow_private=True,
        connector_tool_timeout_seconds=2.0,
        **overrides,
    )


def auth_headers(path: str) -> dict[str, str]:
    """The bootstrap keys: the admin key (`x-api-key`) on `/v1/admin/...`, the standard key
    (`Authorization: Bearer`) everywhere else."""
    if path.startswith("/v1/admin/"):
        return {"x-api-key": ADMIN_KEY}
    return {"Authorization": f"Bearer {API_KEY}"}


def examples(variable: str, ci_tier: int, plain: int) -> int:
    """Generated cases a test: `variable` when set (a deeper run: hundreds), else `ci_tier` where
    CI's tier runs and `plain` in a plain `make test`."""
    chosen = os.environ.get(variable)
    if chosen:
        return int(chosen)
    return ci_tier if ci_tier_runs() else plain


def budget(max_examples: int, *, shrink: bool = True) -> settings:
    """Hypothesis' settings of a fuzz: `max_examples` cases a test, no deadline (CI machines are
    shared), derandomized and without the example database, so that CI sends the same requests
    on every run. Without `shrink`, a failure is reported as found (shrinking a request through
    the app costs minutes when many routes fail at once)."""
    phases = list(Phase) if shrink else [p for p in Phase if p is not Phase.shrink]
    return settings(
        max_examples=max_examples,
        deadline=None,
        derandomize=True,
        database=None,
        phases=phases,
        suppress_health_check=list(HealthCheck),
    )
