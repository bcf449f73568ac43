"""The voices group over HTTP: a custom voice's life (create from a sample, get, update,
sample, delete), the samples refused with nothing stored, tenancy, the preset voices of the
speech models, and both lists (by offset and by cursor, with filters)."""

from __future__ import annotations

import base64
import io
import time
import wave

import httpx
import pytest
from fastapi import FastAPI

from tests.support.app_fixtures import TenantKey, make_client
from tests.voices.support import b64, create_voice, stored_samples, wav

pytestmark = pytest.mark.both_databases("maestrale.voices.repository")

# The voices of the builtin speech test double (maestrale-echo-speech).
ECHO_VOICES = {"echo-low", "echo-high"}


def read_wav(data: bytes) -> tuple[int, int, float]:
    with wave.open(io.BytesIO(data)) as clip:
        return clip.getframerate(), clip.getnchannels(), clip.getnframes() / clip.getframerate()


async def test_a_custom_voice_from_create_to_delete(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    created = await create_voice(
        client, "My Narrator", languages=["en", "fr"], gender="female", tags=["warm"], age=40
    )
    assert created["type"] == "custom" and created["kind"] == "ivc"
    assert created["slug"] == "my-narrator" and created["user_id"]  # the key's user
    assert created["languages"] == ["en", "fr"] and created["gender"] == "female"
    assert created["trimmed_seconds"] is None and created["retention_notice"] == 30
    voice = f"/v1/audio/voices/{created['id']}"
    assert (await client.get(voice)).json() == created

    patched = await client.patch(voice, json={"name": "Storyteller", "tags": None, "age": 41})
    assert patched.status_code == 200, patched.text
    changed = patched.json()
    assert (changed["name"], changed["slug"], changed["tags"], changed["age"]) == (
        "Storyteller",
        "storyteller",
        None,
        41,
    )
    assert changed["gender"] == "female"  # not sent, not changed

    # Stored normalized: WAV, 24 kHz mono, the clip's length.
    sample = await client.get(f"{voice}/sample")
    assert sample.status_code == 200 and sample.headers["content-type"] == "audio/wav"
    rate, channels, seconds = read_wav(sample.content)
    assert (rate, channels) == (24_000, 1) and abs(seconds - 3.86) < 0.05

    deleted = await client.delete(voice)
    assert deleted.status_code == 200 and deleted.json()["id"] == created["id"]
    assert (await client.get(voice)).status_code == 404
    assert stored_samples(app) == []


async def test_a_long_sample_is_trimmed(client: httpx.AsyncClient) -> None:
    created = await create_voice(client, sample=wav(8_000, 40.0))
    assert created["trimmed_seconds"] == pytest.approx(10.0, abs=0.01)  # kept: 30 s


async def test_refused_samples_store_nothing(app: FastAPI, client: httpx.AsyncClient) -> None:
    app.state.services.settings.voice_sample_max_bytes = 1_000_000
    two_hours = wav(100, 7200.0)  # 720 kB of real audio
    cases = {
        "not audio": (b64(b"%PDF-1.4 this is not audio at all"), 400, "invalid_voice_sample"),
        "not base64": ("@@@ not base64 @@@", 400, "invalid_voice_sample"),
        "empty": ("", 400, "missing_voice_sample"),
        "two hours": (b64(two_hours), 400, "voice_sample_too_long"),
        "too short": (b64(wav(16_000, 1.0, 2)), 400, "voice_sample_too_short"),
        "too big": (b64(bytes(1_000_001)), 413, "voice_sample_too_large"),
    }
    for case, (sample, status, code) in cases.items():
        started = time.perf_counter()
        resp = await client.post("/v1/audio/voices", json={"name": case, "sample_audio": sample})
        assert (resp.status_code, resp.json()["code"]) == (status, code), (case, resp.text)
        assert time.perf_counter() - started < 2.0, case
    missing = await client.post("/v1/audio/voices", json={"name": "no sample"})
    assert missing.status_code == 400
    listed = (await client.get("/v1/audio/voices", params={"type": "custom"})).json()
    assert listed["total"] == 0 and stored_samples(app) == []


async def test_another_workspace_does_not_see_a_voice(
    app: FastAPI, client: httpx.AsyncClient, other: TenantKey
) -> None:
    created = await create_voice(client)
    voice = f"/v1/audio/voices/{created['id']}"
    async with make_client(app, other.key) as theirs:
        for resp in (
            await theirs.get(voice),
            await theirs.get(f"{voice}/sample"),
            await theirs.patch(voice, json={"name": "mine"}),
            await theirs.delete(voice),
        ):
            assert resp.status_code == 404, resp.text
        listed = (await theirs.get("/v1/audio/voices", params={"type": "custom"})).json()
        assert listed["items"] == []
        found = (await theirs.get("/v2/audio/voices", params={"type": "custom"})).json()
        assert found["data"] == []
    assert (await client.get(voice)).status_code == 200


async def test_preset_voices_are_listed_with_a_sample_and_read_only(
    client: httpx.AsyncClient,
) -> None:
    listed = (await client.get("/v1/audio/voices", params={"type": "preset", "limit": 100})).json()
    presets = {voice["id"]: voice for voice in listed["items"]}
    assert set(presets) >= ECHO_VOICES
    low = presets["echo-low"]
    assert low["type"] == "preset" and low["user_id"] is None and low["slug"] == "echo-low"
    assert low["languages"] == ["en"] and low["gender"] == "neutral"
    assert (await client.get("/v1/audio/voices/echo-low")).json() == low

    sample = await client.get("/v1/audio/voices/echo-high/sample")
    assert sample.status_code == 200 and sample.headers["content-type"] == "audio/wav"
    assert read_wav(sample.content)[2] > 1.0
    again = await client.get("/v1/audio/voices/echo-high/sample")
    assert again.content == sample.content

    for resp in (
        await client.patch("/v1/audio/voices/echo-low", json={"name": "x"}),
        await client.delete("/v1/audio/voices/echo-low"),
    ):
        assert resp.status_code == 403 and resp.json()["code"] == "preset_voice_read_only"


async def test_both_lists_page_through_every_voice_once(client: httpx.AsyncClient) -> None:
    made = [
        await create_voice(client, "Anna", languages=["it"], gender="female"),
        await create_voice(client, "Bruno", languages=["en", "it"], gender="male"),
        await create_voice(client, "Carla", languages=["fr"], gender="female"),
    ]
    newest_first = [voice["id"] for voice in reversed(made)]
    every = (await client.get("/v1/audio/voices", params={"limit": 1000})).json()
    presets = [voice["id"] for voice in every["items"] if voice["type"] == "preset"]
    assert every["total"] == len(presets) + 3
    assert [voice["id"] for voice in every["items"]] == presets + newest_first

    page = (await client.get("/v1/audio/voices", params={"limit": 2, "offset": 2})).json()
    assert page["page"] == 2 and page["page_size"] == 2
    assert page["total_pages"] == (len(presets) + 4) // 2
    assert [voice["id"] for voice in page["items"]] == (presets + newest_first)[2:4]

    async def walk(size: int, **params: str | list[str]) -> list[str]:
        seen: list[str] = []
        token = None
        while True:
            query: dict[str, str | int | list[str]] = {
                "page_size": size,
                **params,
                **({"page_token": token} if token else {}),
            }
            resp = await client.get("/v2/audio/voices", params=query)
            assert resp.status_code == 200, resp.text
            body = resp.json()
            seen += [voice["id"] for voice in body["data"]]
            token = body["next_page_token"]
            if token is None:
                return seen

    for size in (1, 2, len(presets), 1000):
        assert await walk(size) == presets + newest_first, size
    assert await walk(1, type="custom") == newest_first
    assert await walk(2, type="custom", gender="female") == [made[2]["id"], made[0]["id"]]
    it = await walk(2, type="custom", language=["it", "de"])
    assert it == [made[1]["id"], made[0]["id"]]
    assert await walk(5, query="RUN") == [made[1]["id"]]
    assert await walk(5, kind="ivc") == newest_first
    naive = base64.urlsafe_b64encode(b'["c", "2026-01-01T00:00:00", "x"]').decode()
    for token in ("garbage", naive):
        bad = await client.get("/v2/audio/voices", params={"page_token": token})
        assert bad.status_code == 400 and bad.json()["code"] == "invalid_page_token", token
