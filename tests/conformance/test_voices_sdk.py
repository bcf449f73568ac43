"""mistralai 3.x speaks with the voices group (`audio.voices`: create from a sample, list,
search, get, update, sample, delete) and mints client sessions (`realtime.sessions.create`)
against a live server, and 2.8.0 with the voices group as it had it (a `slug` of its own, free
gender text); every answer parses into the SDK's own models."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.conformance.conftest import LiveServer
from tests.support.sdks import NEWEST_3, OWN, SdkProcess
from tests.voices.support import REPORT_WAV, b64


@pytest.fixture(scope="module")
def sdk3(live_server: LiveServer) -> Iterator[SdkProcess]:
    sdk = SdkProcess(NEWEST_3, live_server.url, live_server.api_key)
    yield sdk
    sdk.close()


def test_voices_and_client_sessions(sdk3: SdkProcess) -> None:
    def ok(operation: str, **kwargs: object) -> Any:
        return sdk3.call(operation, **kwargs).ok()

    created = ok(
        "audio.voices.create",
        name="SDK voice",
        languages=["en"],
        gender="male",
        sample_audio=b64(REPORT_WAV),
        sample_filename="report.wav",
    )
    assert created["type"] == "custom" and created["kind"] == "ivc"
    voice_id = created["id"]
    assert ok("audio.voices.get", voice_id=voice_id)["name"] == "SDK voice"
    updated = ok("audio.voices.update", voice_id=voice_id, name="Renamed", tags=["calm"])
    assert (updated["name"], updated["tags"]) == ("Renamed", ["calm"])
    assert ok("audio.voices.get_sample_audio", voice_id=voice_id)["bytes"] > 44

    listed = ok("audio.voices.list", limit=100, type_="custom")
    assert [voice["id"] for voice in listed["items"]] == [voice_id] and listed["total"] == 1
    presets = ok("audio.voices.list", limit=100, type_="preset")
    assert {"echo-low", "echo-high"} <= {voice["id"] for voice in presets["items"]}
    found = ok("audio.voices.search", page_size=1, gender=["male"], query="renamed")
    assert [voice["id"] for voice in found["result"]["data"]] == [voice_id]
    first = ok("audio.voices.search", page_size=1)
    assert len(first["result"]["data"]) == 1 and first["result"]["next_page_token"]

    assert ok("audio.voices.delete", voice_id=voice_id)["id"] == voice_id
    gone = sdk3.call("audio.voices.get", voice_id=voice_id)
    assert gone.status == 404

    session = ok(
        "realtime.sessions.create",
        request={"model": "maestrale-echo-speech", "purpose": "realtime", "ttl_seconds": 60},
    )
    assert session["object"] == "client.session"
    assert session["client_secret"]["value"].startswith("rt_")


def test_mistralai_2_voices(live_server: LiveServer) -> None:
    sdk = SdkProcess(OWN, live_server.url, live_server.api_key)
    try:
        created = sdk.call(
            "audio.voices.create",
            name="Old client",
            slug="old-one",
            gender="other",
            sample_audio=b64(REPORT_WAV),
        ).ok()
        assert (created["slug"], created["gender"]) == ("old-one", "other")
        voice_id = created["id"]
        renamed = sdk.call("audio.voices.update", voice_id=voice_id, name="Older").ok()
        assert (renamed["name"], renamed["slug"]) == ("Older", "old-one")
        assert sdk.call("audio.voices.get_sample_audio", voice_id=voice_id).ok()["bytes"] > 44
        assert sdk.call("audio.voices.delete", voice_id=voice_id).ok()["id"] == voice_id
    finally:
        sdk.close()
