"""The local cluster under faults, short (bench/cluster/faults.py runs the full sizes): three API
replicas and two workers behind HAProxy on their own Postgres, Redis, S3 (moto) and Temporal,
under a steady mixed load. One test per fault, in order, on one cluster: the baseline, an API
replica SIGKILLed, a worker SIGKILLed mid-batch and mid-campaign, Postgres stopped for 10 s,
Redis stopped, and rate and spend limits across the replicas (the bench adds a graceful stop).
Each fails with the claims that did not hold (sent, failed, lost, duplicated and why).

The fleet's tier: run by `.ci/run` (and wherever MAESTRALE_TEST_CI_TIER=1), not by a plain
`make test`, whose ten minutes it would cost one and a half; skipped where HAProxy, the Postgres
server binaries, redis-server, moto or the temporal CLI are missing."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bench.cluster.cluster import Spec, tools_missing
from bench.cluster.context import Bench
from bench.cluster.faults import SHORT_SCENARIOS, cluster_bench, run_scenario
from bench.cluster.report import SHORT, table

MISSING = tools_missing(Spec())
pytestmark = [
    pytest.mark.both_databases(),
    pytest.mark.ci_tier,
    pytest.mark.skipif(bool(MISSING), reason="missing: " + "; ".join(MISSING)),
    # The first test also starts the cluster (about a minute on a busy 2-core machine).
    pytest.mark.timeout(240),
]


@pytest.fixture(scope="module")
async def bench(request: pytest.FixtureRequest) -> AsyncIterator[Bench]:
    """The cluster, stopped at the end; its state dir (logs) is kept when a test failed."""
    failed_before = request.session.testsfailed
    # Under /tmp, not pytest's private tmp_path: Postgres runs as its own user beneath it.
    state = Path(tempfile.mkdtemp(prefix="maestrale-cluster-"))
    try:
        async with cluster_bench(state, Spec(port=0, job_lease_seconds=3.0), SHORT) as running:
            yield running
    finally:
        if request.session.testsfailed == failed_before:
            shutil.rmtree(state, ignore_errors=True)


@pytest.mark.parametrize("name", SHORT_SCENARIOS)
async def test_fault(bench: Bench, name: str) -> None:
    report = await run_scenario(bench, name)
    logs = f"(the cluster's logs are kept in {bench.cluster.dir / 'logs'})"
    assert report.ok, "\n".join(["", *table([report]), *report.failures(), logs])
