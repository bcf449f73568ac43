"""Imports every domain's tables so that `Base.metadata` is complete (migrations, checks)."""

from maestrale.accounting import tables as accounting_tables
from maestrale.admin import tables as admin_tables
from maestrale.admin.groups import tables as admin_group_tables
from maestrale.admin.users import tables as admin_user_tables
from maestrale.agents import tables as agent_tables
from maestrale.audio_agents import tables as audio_agent_tables
from maestrale.batch import tables as batch_tables
from maestrale.catalog import tables as catalog_tables
from maestrale.connectors import tables as connector_tables
from maestrale.console import tables as console_tables
from maestrale.conversations import tables as conversation_tables
from maestrale.core.auth import tables as auth_tables
from maestrale.core.auth.client_sessions import tables as client_session_tables
from maestrale.core.db import Base
from maestrale.core.jobs import tables as job_tables
from maestrale.files import tables as file_tables
from maestrale.fine_tuning import tables as fine_tuning_tables
from maestrale.inbound.triggers import tables as trigger_tables
from maestrale.inbound.webhooks import tables as inbound_webhook_tables
from maestrale.libraries import tables as library_tables
from maestrale.libraries.index import tables as library_index_tables
from maestrale.limits import tables as limits_tables
from maestrale.observability.campaigns import tables as observability_campaign_tables
from maestrale.observability.datasets import tables as observability_dataset_tables
from maestrale.observability.evaluations import tables as observability_evaluation_tables
from maestrale.observability.events import tables as observability_event_tables
from maestrale.observability.judges import tables as observability_judge_tables
from maestrale.observability.pipelines import tables as observability_pipeline_tables
from maestrale.observability.span_evaluations import tables as observability_span_evaluation_tables
from maestrale.rag import tables as rag_tables
from maestrale.registries import tables as registry_tables
from maestrale.responses import tables as response_tables
from maestrale.search_indexes import tables as search_index_tables
from maestrale.telemetry import tables as telemetry_tables
from maestrale.voices import tables as voice_tables
from maestrale.workflows.events import tables as workflow_event_tables
from maestrale.workflows.executions import tables as workflow_execution_tables
from maestrale.workflows.registry import tables as workflow_registry_tables
from maestrale.workflows.schedules import tables as workflow_schedule_tables

metadata = Base.metadata


def modelled(name: str | None, type_: str, parent_names: object) -> bool:
    """Alembic's `include_name`: the objects the models declare, not those that migrations
    create beside them on purpose (full-text indexes)."""
    return name not in observability_event_tables.TEXT_INDEX_OBJECTS and not (
        library_index_tables.unmodelled(name, type_, parent_names)
    )


__all__ = [
    "accounting_tables",
    "admin_group_tables",
    "admin_tables",
    "admin_user_tables",
    "agent_tables",
    "audio_agent_tables",
    "auth_tables",
    "batch_tables",
    "catalog_tables",
    "client_session_tables",
    "connector_tables",
    "console_tables",
    "conversation_tables",
    "file_tables",
    "fine_tuning_tables",
    "inbound_webhook_tables",
    "job_tables",
    "library_index_tables",
    "library_tables",
    "limits_tables",
    "metadata",
    "modelled",
    "observability_campaign_tables",
    "observability_dataset_tables",
    "observability_evaluation_tables",
    "observability_event_tables",
    "observability_judge_tables",
    "observability_pipeline_tables",
    "observability_span_evaluation_tables",
    "rag_tables",
    "registry_tables",
    "response_tables",
    "search_index_tables",
    "telemetry_tables",
    "trigger_tables",
    "voice_tables",
    "workflow_event_tables",
    "workflow_execution_tables",
    "workflow_registry_tables",
    "workflow_schedule_tables",
]
