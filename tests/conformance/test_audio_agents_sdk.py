"""mistralai 3.x `client.audio.agents` and `client.audio.sessions` against a live server: every
operation, its answer parsed into the SDK's own models."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.conformance.conftest import LiveServer
from tests.support.sdks import NEWEST_3, SdkProcess


@pytest.fixture(scope="module")
def sdk3(live_server: LiveServer) -> Iterator[SdkProcess]:
    sdk = SdkProcess(NEWEST_3, live_server.url, live_server.api_key)
    yield sdk
    sdk.close()


def page(body: Any) -> Any:
    """A paged list's page (the SDK wraps it with its `next`)."""
    return body.get("result", body) if isinstance(body, dict) else body


def test_audio_agents_and_sessions(sdk3: SdkProcess, live_server: LiveServer) -> None:
    def ok(operation: str, **kwargs: object) -> Any:
        return sdk3.call("audio." + operation, **kwargs).ok()

    configuration = {
        "llm": {"model": "maestrale-echo"},
        "tts": {"model": "maestrale-echo-speech", "voice_id": "echo-high"},
        "instructions": "Be brief.",
        "welcome_message": "Hello!",
    }
    agent = ok("agents.create", name="front desk", configuration=configuration)
    assert agent["version"] == 1 and agent["configuration"]["tts"]["voice_id"] == "echo-high"
    updated = ok(
        "agents.update",
        agent_id=agent["id"],
        name="front desk 2",
        configuration={**configuration, "welcome_message": "Hi!"},
    )
    assert updated["version"] == 2
    assert ok("agents.get", agent_id=agent["id"], version=1)["name"] == "front desk"
    listed = page(ok("agents.list", page_size=10, search="front"))
    assert [a["id"] for a in listed["data"]] == [agent["id"]]
    versions = page(ok("agents.list_versions", agent_id=agent["id"], page_size=10))
    assert [v["version"] for v in versions["data"]] == [1, 2]

    created = sdk3.call("audio.sessions.create", agent_id=agent["id"])
    if created.error is not None:  # no realtime transcription model in this server's catalog
        assert created.status == 400 and "stt.model" in str(created.body)
    else:
        session = created.ok()
        assert session["server_url"].endswith(f"/v1/audio/sessions/{session['id']}/realtime")
        assert session["server_url"].startswith("ws://")
        got = ok("sessions.get", session_id=session["id"])
        assert got["status"] == "active" and got["transcripts"] == []
        summaries = page(ok("agents.list_sessions", agent_id=agent["id"]))
        assert [s["id"] for s in summaries["data"]] == [session["id"]]
        ok("sessions.close", session_id=session["id"])
        assert ok("sessions.get", session_id=session["id"])["status"] == "ended"

    ok("agents.delete", agent_id=agent["id"])
    gone = sdk3.call("audio.agents.get", agent_id=agent["id"])
    assert gone.status == 404
