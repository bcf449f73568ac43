"""mistralai 3.x drives the inbound group against a live server: the five webhook operations
(`beta.webhooks`) and the five trigger operations (`beta.triggers`); a delivery signed as GitHub
signs it starts the trigger's agent conversation, which `list_events` links. Every answer
parses into the SDK's own models; its errors are the SDK's 4xx."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import orjson
import pytest

from tests.conformance.conftest import LiveServer
from tests.inbound.trigger_support import SECRET, github_headers
from tests.support.sdks import NEWEST_3, SdkProcess

pytestmark = pytest.mark.sdk3_group


@pytest.fixture(scope="module")
def sdk3(live_server: LiveServer) -> Iterator[SdkProcess]:
    sdk = SdkProcess(NEWEST_3, live_server.url, live_server.api_key)
    yield sdk
    sdk.close()


def test_webhooks_and_triggers_through_every_operation(
    sdk3: SdkProcess, live_server: LiveServer
) -> None:
    def ok(operation: str, **kwargs: object) -> Any:
        return sdk3.call(operation, **kwargs).ok()

    name = f"sdk-{uuid.uuid4().hex[:8]}"
    webhook = ok("beta.webhooks.create", provider="github", name=name, secret=SECRET)
    assert (webhook["provider"], webhook["http_method"]) == ("github", "POST")
    hook_id = webhook["id"]
    assert hook_id in [w["id"] for w in ok("beta.webhooks.list")]
    assert ok("beta.webhooks.get", webhook_id=hook_id)["name"] == name
    assert ok("beta.webhooks.get_signing_secret", webhook_id=hook_id) == {"signing_secret": SECRET}

    agent = ok("beta.agents.create", model="maestrale-echo", name=f"{name}-agent")
    trigger = ok(
        "beta.triggers.create",
        event_source_id=hook_id,
        handler="agents",
        action={"primitive_id": agent["id"], "type": "start_agent_session"},
        owner_type="workspace",
        title="on push",
        filters="event_type == 'push' && repository.name == 'dashboard'",
    )
    trigger_id = trigger["id"]
    assert trigger["event_source"] == ok("beta.webhooks.get", webhook_id=hook_id)
    assert trigger["action"] == {"primitive_id": agent["id"], "type": "start_agent_session"}
    listed = ok("beta.triggers.list", handler="agents", event_source_id=hook_id)
    assert [t["id"] for t in listed] == [trigger_id]
    assert ok("beta.triggers.get", trigger_id=trigger_id)["title"] == "on push"

    payload = orjson.dumps({"repository": {"name": "dashboard"}})
    path = httpx.URL(webhook["url"]).path
    sent = httpx.post(live_server.url + path, content=payload, headers=github_headers(payload))
    assert sent.status_code == 200, sent.text
    deadline = time.monotonic() + 30
    while True:
        events = ok("beta.triggers.list_events", trigger_id=trigger_id, limit=5)["data"]
        if (events and events[0]["status"] == "TRIGGERED") or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    [event] = events
    assert event["status"] == "TRIGGERED" and event["url"].startswith("/v1/conversations/")

    ok("beta.triggers.delete", trigger_id=trigger_id)
    assert sdk3.call("beta.triggers.get", trigger_id=trigger_id).status == 404
    ok("beta.webhooks.delete", webhook_id=hook_id)
    assert sdk3.call("beta.webhooks.get", webhook_id=hook_id).status == 404
