"""Guardrails on the real local moderation engine (`maestrale-moderation`, the [moderation]
extra), reached through the platform's default model names of v1 and v2 checks."""

from __future__ import annotations

import httpx
import pytest

THREAT = "I am going to kill you and burn your house down tonight."

# e5 loads with the first call: slow on a loaded machine, and no time is measured here.
pytestmark = pytest.mark.timeout(600)


async def test_default_v1_model_blocks_a_threat(client: httpx.AsyncClient) -> None:
    guardrails = [{"moderation_llm_v1": {"action": "block"}}]  # mistral-moderation-2411
    blocked = await client.post(
        "/v1/chat/completions",
        json={
            "model": "maestrale-echo",
            "messages": [{"role": "user", "content": THREAT}],
            "guardrails": guardrails,
        },
    )
    assert blocked.status_code == 403, blocked.text
    body = blocked.json()
    assert body["code"] == "guardrail_blocked"
    assert (
        "violence_and_threats" in body["message"] and "mistral-moderation-2411" in body["message"]
    )

    clean = await client.post(
        "/v1/chat/completions",
        json={
            "model": "maestrale-echo",
            "messages": [{"role": "user", "content": "What is a good recipe for pancakes?"}],
            "guardrails": guardrails,
        },
    )
    assert clean.status_code == 200, clean.text


async def test_default_v2_model_name_resolves(client: httpx.AsyncClient) -> None:
    started = await client.post(
        "/v1/conversations",
        json={
            "model": "maestrale-echo",
            "inputs": THREAT,
            "guardrails": [{"moderation_llm_v2": {"action": "none"}}],  # mistral-moderation-2603
        },
    )
    assert started.status_code == 200, started.text
    [result] = started.json()["guardrails"]
    assert result["model"] == "mistral-moderation-2603" and result["error"] is None
    assert "violence_and_threats" in result["flagged_categories"]
    assert {"dangerous", "criminal"} <= set(result["category_scores"])
    assert "jailbreaking" not in result["category_scores"]
