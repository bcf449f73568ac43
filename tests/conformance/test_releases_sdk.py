"""The core groups through each SDK release (2.8.0, the newest 2.x and 3.x) against a live
server: models, chat (plain and streamed), embeddings, files, agents, conversations, batch,
and moderation. Every answer parses into the release's own models (`SdkResult.ok`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.support.sdks import SdkProcess

MODEL = "maestrale-echo"


def test_core_groups_through_each_sdk(any_sdk: SdkProcess, tmp_path: Path) -> None:
    def ok(operation: str, **kwargs: Any) -> Any:
        return any_sdk.call(operation, **kwargs).ok()

    ids = {card["id"] for card in ok("models.list")["data"]}
    assert MODEL in ids
    assert ok("models.retrieve", model_id=MODEL)["id"] == MODEL

    messages = [{"role": "user", "content": "ping"}]
    chat = ok("chat.complete", model=MODEL, messages=messages)
    assert chat["choices"][0]["message"]["content"] == "echo: ping"
    chunks = ok("chat.stream", model=MODEL, messages=messages)
    text = "".join(c["data"]["choices"][0]["delta"].get("content") or "" for c in chunks)
    assert text == "echo: ping"
    vectors = ok("embeddings.create", model="maestrale-embed", inputs=["a", "b"])["data"]
    assert len(vectors) == 2 and len(vectors[0]["embedding"]) > 0

    lines = [{"custom_id": "1", "body": {"messages": messages}}]
    source = tmp_path / "batch.jsonl"
    source.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    upload = ok(
        "files.upload", file={"file_name": "batch.jsonl", "path": str(source)}, purpose="batch"
    )
    assert ok("files.retrieve", file_id=upload["id"])["purpose"] == "batch"
    assert upload["id"] in {f["id"] for f in ok("files.list", page_size=100)["data"]}
    job = ok(
        "batch.jobs.create",
        input_files=[upload["id"]],
        endpoint="/v1/chat/completions",
        model=MODEL,
    )
    assert ok("batch.jobs.get", job_id=job["id"])["id"] == job["id"]
    assert job["id"] in {j["id"] for j in ok("batch.jobs.list", page_size=100)["data"]}

    agent = ok("beta.agents.create", model=MODEL, name="release check", instructions="be brief")
    assert ok("beta.agents.get", agent_id=agent["id"])["name"] == "release check"
    updated = ok("beta.agents.update", agent_id=agent["id"], description="checked")
    assert updated["description"] == "checked" and updated["version"] > agent["version"]
    assert agent["id"] in {a["id"] for a in ok("beta.agents.list", page_size=100)}

    started = ok("beta.conversations.start", agent_id=agent["id"], inputs="hello")
    conversation = started["conversation_id"]
    ok("beta.conversations.append", conversation_id=conversation, inputs="again")
    history = ok("beta.conversations.get_history", conversation_id=conversation)["entries"]
    assert [e["type"] for e in history].count("message.input") == 2
    streamed = ok("beta.conversations.start_stream", model=MODEL, inputs="streamed")
    assert streamed[-1]["event"] == "conversation.response.done"
    assert ok("beta.conversations.get", conversation_id=conversation)["id"] == conversation
    ok("beta.conversations.delete", conversation_id=conversation)
    ok("beta.agents.delete", agent_id=agent["id"])

    moderation = ok("classifiers.moderate", model="maestrale-echo-moderation", inputs=["hello"])
    assert moderation["results"][0]["categories"]
    ok("files.delete", file_id=upload["id"])
    missing = any_sdk.call("files.retrieve", file_id=upload["id"])
    assert missing.status == 404
