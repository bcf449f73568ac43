"""The suite's tiers: a test marked `ci_tier` (or driving the console in Chromium) runs only where
MAESTRALE_TEST_CI_TIER=1, which `.ci/run` sets; a plain `make test` skips it, saying why."""

from __future__ import annotations

import os

CI_TIER = "ci_tier"
SKIP_REASON = "CI's tier: MAESTRALE_TEST_CI_TIER=1 (which .ci/run sets)"


def ci_tier_runs() -> bool:
    """Whether this run includes CI's tier."""
    return os.environ.get("MAESTRALE_TEST_CI_TIER") == "1"
