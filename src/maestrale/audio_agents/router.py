"""The /v1/audio/agents and /v1/audio/sessions groups (SDK 3.x `client.audio.agents`,
`client.audio.sessions`). The session WebSocket itself is `realtime/route.py`."""

from __future__ import annotations

from functools import partial

from fastapi import Request, Response

from maestrale.audio_agents.realtime.live import live_sessions
from maestrale.audio_agents.schemas import (
    AudioAgentCreate,
    AudioAgentListPage,
    AudioAgentOut,
    AudioAgentSessionListPage,
    AudioAgentUpdate,
    AudioSessionCreate,
    AudioSessionCreated,
    AudioSessionOut,
)
from maestrale.audio_agents.service import AudioAgentService
from maestrale.audio_agents.sessions import AudioSessionService, owner_of
from maestrale.core.app_services import app_services
from maestrale.core.auth.dependencies import CurrentTenant, StandardAuth
from maestrale.core.auth.invalidation import Invalidation
from maestrale.core.errors import error_responses
from maestrale.core.routing import Work, domain_router
from maestrale.engines.dependencies import Engines

router = domain_router(prefix="/audio", tags=["audio"])


@router.post("/agents", response_model=AudioAgentOut, responses=error_responses((400,)))
async def create_audio_agent(
    body: AudioAgentCreate,
    work: Work,
    tenant: CurrentTenant,
    principal: StandardAuth,
    engines: Engines,
) -> AudioAgentOut:
    """Create an audio agent (version 1): a chat model (`llm`), a speech model and voice
    (`tts`), a realtime transcription model (`stt`), turn-taking (`turn`), instructions, tools
    and a welcome message. Omitted models default to the catalog's first of each kind; a model
    that is unknown or of the wrong kind is a 400 naming the field."""
    return await AudioAgentService(work.session, tenant, engines).create(body, owner_of(principal))


@router.get("/agents", response_model=AudioAgentListPage)
async def list_audio_agents(
    work: Work,
    tenant: CurrentTenant,
    engines: Engines,
    page_size: int = 10,
    page_token: str | None = None,
    search: str | None = None,
) -> AudioAgentListPage:
    """The workspace's audio agents (their current versions), newest first; `search` matches a
    substring of the name. Pass `next_page_token` back as `page_token` for the next page."""
    return await AudioAgentService(work.session, tenant, engines).list_page(
        page_size, page_token, search
    )


@router.get("/agents/{agent_id}", response_model=AudioAgentOut)
async def get_audio_agent(
    agent_id: str, work: Work, tenant: CurrentTenant, engines: Engines, version: int | None = None
) -> AudioAgentOut:
    """An audio agent at its current version, or at `version`."""
    return await AudioAgentService(work.session, tenant, engines).get(agent_id, version)


@router.put("/agents/{agent_id}", response_model=AudioAgentOut)
async def update_audio_agent(
    agent_id: str, body: AudioAgentUpdate, work: Work, tenant: CurrentTenant, engines: Engines
) -> AudioAgentOut:
    """A new version of the agent: its name and whole configuration (what the body omits takes
    the defaults, not the previous version's values)."""
    return await AudioAgentService(work.session, tenant, engines).update(agent_id, body)


@router.delete("/agents/{agent_id}", status_code=204)
async def delete_audio_agent(
    agent_id: str, work: Work, tenant: CurrentTenant, engines: Engines
) -> Response:
    """Delete the agent and its versions; its past sessions and their transcripts stay."""
    await AudioAgentService(work.session, tenant, engines).delete(agent_id)
    return Response(status_code=204)


@router.get("/agents/{agent_id}/versions", response_model=AudioAgentListPage)
async def list_audio_agent_versions(
    agent_id: str,
    work: Work,
    tenant: CurrentTenant,
    engines: Engines,
    page_size: int = 10,
    page_token: str | None = None,
) -> AudioAgentListPage:
    """The agent's versions, oldest first."""
    return await AudioAgentService(work.session, tenant, engines).versions(
        agent_id, page_size, page_token
    )


@router.get("/agents/{agent_id}/sessions", response_model=AudioAgentSessionListPage)
async def list_audio_agent_sessions(
    agent_id: str,
    work: Work,
    tenant: CurrentTenant,
    engines: Engines,
    page_size: int = 10,
    page_token: str | None = None,
) -> AudioAgentSessionListPage:
    """The agent's sessions, newest first: when each was joined and how long it lasted
    (seconds, once ended)."""
    return await AudioAgentService(work.session, tenant, engines).sessions(
        agent_id, page_size, page_token
    )


@router.post("/sessions", response_model=AudioSessionCreated, responses=error_responses((400,)))
async def create_audio_session(
    body: AudioSessionCreate,
    request: Request,
    work: Work,
    tenant: CurrentTenant,
    principal: StandardAuth,
    engines: Engines,
) -> AudioSessionCreated:
    """Create a voice session: of an audio agent (`agent_id`, at `agent_version` or its current
    one; the body's own setup fields replace the agent's) or of an inline setup. This server has
    no LiveKit room: `server_url` is its own session WebSocket
    (`ws[s]://<host>/v1/audio/sessions/{id}/realtime`), opened with `participant_token` (shown
    once; `Authorization: Bearer <token>` or `?token=`) before `expires_at` (15 minutes).
    Function, hang-up and call-transfer tools cannot run in such a session (400)."""
    scheme = "wss" if request.url.scheme in ("https", "wss") else "ws"
    base_url = f"{scheme}://{request.url.netloc}"
    return await AudioSessionService(work.session, tenant, engines).create(
        body, principal, base_url
    )


@router.get("/sessions/{session_id}", response_model=AudioSessionOut)
async def get_audio_session(
    session_id: str, request: Request, work: Work, tenant: CurrentTenant, engines: Engines
) -> AudioSessionOut:
    """A session: `active` until closed or its socket ends, its participants (1 while its
    WebSocket is open on this server), and its transcripts (the user's, the assistant's and the
    tools' turns, read from the session's conversation)."""
    live = live_sessions(request).live(session_id)
    return await AudioSessionService(work.session, tenant, engines).get(session_id, live)


@router.delete("/sessions/{session_id}", status_code=204)
async def close_audio_session(
    session_id: str, request: Request, work: Work, tenant: CurrentTenant, engines: Engines
) -> Response:
    """End a session: its live WebSocket (on any replica) is closed and it cannot be joined
    again."""
    await AudioSessionService(work.session, tenant, engines).close(session_id)
    ended = [Invalidation("audio_session", session_id)]
    work.on_commit(partial(app_services(request).invalidator.publish, ended))
    return Response(status_code=204)
