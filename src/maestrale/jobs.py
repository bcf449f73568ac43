"""The job registry of the platform: every domain's `tasks.register` is called here."""

from __future__ import annotations

from typing import TYPE_CHECKING

from maestrale.core.jobs.worker import JobRegistry

if TYPE_CHECKING:
    from maestrale.services import Services


def build_registry(services: Services | None = None) -> JobRegistry:
    """All job kinds this installation runs. Domains add `registry.register(...)` calls here as
    they gain background work (batch lines, campaigns, fine-tuning, imports). Kinds that call
    models or touch blobs need `services`; without them only self-contained kinds register."""
    registry = JobRegistry()
    if services is not None:
        from maestrale.batch.tasks import register as register_batch
        from maestrale.files.tasks import register as register_files
        from maestrale.fine_tuning.tasks import register as register_fine_tuning
        from maestrale.inbound.triggers.tasks import register as register_triggers
        from maestrale.libraries.tasks import register as register_libraries
        from maestrale.observability.campaigns.tasks import register as register_campaigns
        from maestrale.observability.datasets.tasks import register as register_dataset_imports
        from maestrale.observability.evaluations.runs.tasks import (
            register as register_evaluation_runs,
        )
        from maestrale.observability.pipelines.tasks import register as register_pipelines
        from maestrale.responses.tasks import register as register_responses
        from maestrale.search_indexes.summaries.tasks import register as register_summaries
        from maestrale.search_indexes.tasks import register as register_search_indexes

        register_files(registry, services.blobs)
        register_batch(registry, services)
        register_libraries(registry, services)
        register_fine_tuning(registry, services.settings, services.blobs, services.engines)
        register_campaigns(registry, services.platform_calls)
        register_evaluation_runs(registry, services.platform_calls)
        register_dataset_imports(registry, services.blobs)
        register_pipelines(registry, services.platform_calls)
        register_responses(registry, services)
        register_triggers(registry, services)
        register_search_indexes(registry, services)
        register_summaries(registry, services.platform_calls)
    return registry
