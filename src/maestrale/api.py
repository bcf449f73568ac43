"""The /v1 router: every domain router, alphabetically."""

from __future__ import annotations

from fastapi import APIRouter
from starlette.routing import BaseRoute

from maestrale.admin.identity.router import router as identity_router
from maestrale.admin.router import router as admin_router
from maestrale.admin.service_accounts.router import router as service_accounts_router
from maestrale.agents.completions import router as agent_completions_router
from maestrale.agents.router import router as agents_router
from maestrale.audio.client_sessions.router import router as client_sessions_router
from maestrale.audio.realtime.router import router as audio_realtime_router
from maestrale.audio.router import router as audio_router
from maestrale.audio.speech.realtime.router import router as speech_realtime_router
from maestrale.audio.speech.router import router as speech_router
from maestrale.audio_agents.realtime.route import router as voice_session_router
from maestrale.audio_agents.router import router as audio_agents_router
from maestrale.batch.router import router as batch_router
from maestrale.catalog.router import router as catalog_router
from maestrale.classifiers.router import router as classifiers_router
from maestrale.completions.router import router as completions_router
from maestrale.connectors.router import router as connectors_router
from maestrale.conversations.router import router as conversations_router
from maestrale.files.router import router as files_router
from maestrale.fine_tuning.router import router as fine_tuning_router
from maestrale.inbound.triggers.router import router as triggers_router
from maestrale.inbound.webhooks.router import router as webhooks_router
from maestrale.libraries.router import router as libraries_router
from maestrale.observability.campaigns.router import router as observability_campaigns_router
from maestrale.observability.datasets.router import router as observability_datasets_router
from maestrale.observability.evaluations.optimizations.router import (
    router as observability_optimizations_router,
)
from maestrale.observability.evaluations.projects.router import (
    router as observability_projects_router,
)
from maestrale.observability.evaluations.runs.router import router as observability_runs_router
from maestrale.observability.events.router import router as observability_events_router
from maestrale.observability.judges.router import router as observability_judges_router
from maestrale.observability.pipelines.router import router as observability_pipelines_router
from maestrale.observability.span_evaluations.router import (
    router as observability_span_evaluations_router,
)
from maestrale.observability.traces.fields_router import (
    router as observability_trace_fields_router,
)
from maestrale.observability.traces.router import router as observability_traces_router
from maestrale.ocr.router import router as ocr_router
from maestrale.rag.router import router as rag_router
from maestrale.registries.router import prompts_router, skills_router
from maestrale.responses.router import router as responses_router
from maestrale.search_indexes.reading_router import router as search_index_reading_router
from maestrale.search_indexes.router import router as search_indexes_router
from maestrale.search_indexes.summaries.router import router as search_index_summaries_router
from maestrale.telemetry.router import router as telemetry_router
from maestrale.telemetry.router import worker_router as telemetry_worker_router
from maestrale.voices.router import router as voices_router
from maestrale.voices.router import router_v2 as voices_v2_router
from maestrale.workflows.router import router as workflows_router

api_router = APIRouter(prefix="/v1")
api_router.include_router(agent_completions_router)
api_router.include_router(agents_router)
api_router.include_router(audio_realtime_router)
api_router.include_router(audio_router)
api_router.include_router(speech_realtime_router)
api_router.include_router(speech_router)
api_router.include_router(audio_agents_router)
api_router.include_router(voice_session_router)
api_router.include_router(batch_router)
api_router.include_router(catalog_router)
api_router.include_router(classifiers_router)
api_router.include_router(client_sessions_router)
api_router.include_router(completions_router)
api_router.include_router(connectors_router)
api_router.include_router(conversations_router)
api_router.include_router(files_router)
api_router.include_router(fine_tuning_router)
api_router.include_router(identity_router)
api_router.include_router(webhooks_router)
api_router.include_router(libraries_router)
api_router.include_router(observability_campaigns_router)
api_router.include_router(observability_datasets_router)
api_router.include_router(observability_optimizations_router)
api_router.include_router(observability_projects_router)
api_router.include_router(observability_runs_router)
api_router.include_router(observability_events_router)
api_router.include_router(observability_judges_router)
api_router.include_router(observability_pipelines_router)
api_router.include_router(observability_span_evaluations_router)
api_router.include_router(observability_trace_fields_router)
# After the traces' fields router: GET /traces/fields is not the trace named 'fields'.
api_router.include_router(observability_traces_router)
api_router.include_router(ocr_router)
api_router.include_router(rag_router)
api_router.include_router(responses_router)
api_router.include_router(search_index_reading_router)
api_router.include_router(search_indexes_router)
api_router.include_router(search_index_summaries_router)
api_router.include_router(service_accounts_router)
api_router.include_router(telemetry_router)  # /v1/traces, /v1/logs (OTLP/HTTP)
api_router.include_router(triggers_router)
api_router.include_router(voices_router)
api_router.include_router(workflows_router)
# Last: its catch-all must not shadow any other route.
api_router.include_router(admin_router)

# What an app's router takes of the /v1 routes: one include of `api_router`, made once per
# process. FastAPI builds what a route needs at request time (its dependant, its response
# fields: pydantic adapters) per include, on the include's first requests, so every app that
# included `api_router` itself paid it again: 50 ms to a second of its first request, by the
# route's place (the tests build thousands of apps). These routes carry no app:
# `app.dependency_overrides` does not reach them (nothing here uses it).
_included = APIRouter()
_included.include_router(api_router)
_included.include_router(voices_v2_router)  # /v2/audio/voices
_included.include_router(prompts_router)  # /v2/prompts
_included.include_router(skills_router)  # /v2/skills
_included.include_router(telemetry_worker_router)  # /telemetry/v1/* (workflows worker)
API_ROUTES: tuple[BaseRoute, ...] = tuple(_included.routes)
