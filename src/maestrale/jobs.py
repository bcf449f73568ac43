"""The job registry of the platform: every domain's `tasks.register` is called here."""

from __future__ import annotations

from maestrale.core.jobs.worker import JobRegistry


def build_registry() -> JobRegistry:
    """All job kinds this installation runs. Domains add `registry.register(...)` calls here as
    they gain background work (batch lines, campaigns, fine-tuning, imports)."""
    return JobRegistry()
