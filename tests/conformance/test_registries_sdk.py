"""mistralai 3.x drives the prompts and skills registries (`beta.prompts`, `beta.skills`: nine
operations each) against a live server; every answer parses into the SDK's own models, and
its errors are the SDK's 4xx."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from tests.conformance.conftest import LiveServer
from tests.support.sdks import NEWEST_3, SdkProcess

pytestmark = pytest.mark.sdk3_group


@pytest.fixture(scope="module")
def sdk3(live_server: LiveServer) -> Iterator[SdkProcess]:
    sdk = SdkProcess(NEWEST_3, live_server.url, live_server.api_key)
    yield sdk
    sdk.close()


@pytest.mark.parametrize(
    ("group", "first", "second", "metadata"),
    [
        (
            "beta.prompts",
            {"content": "Hello {{ who }}"},
            {"content": "Hi {{who}}, {{ day }}"},
            {"title": "Greeting", "description": "says hello"},
        ),
        (
            "beta.skills",
            {"description": "Formats", "body": "Use it", "assets": {"a.py": {"text_content": "1"}}},
            {"description": "Formats v2", "body": "Use it well"},
            {},
        ),
    ],
)
def test_a_registry_through_every_operation(
    sdk3: SdkProcess,
    group: str,
    first: dict[str, Any],
    second: dict[str, Any],
    metadata: dict[str, Any],
) -> None:
    id_arg = "prompt_id" if group == "beta.prompts" else "skill_id"

    def ok(operation: str, **kwargs: object) -> Any:
        return sdk3.call(f"{group}.{operation}", **kwargs).ok()

    name = f"sdk-{uuid.uuid4().hex[:8]}"
    label = f"prod-{uuid.uuid4().hex[:6]}"
    created = ok("create", name=name, definition=first, notes="first", aliases=[label])
    ref = {id_arg: created["id"]}
    assert (created["name"], created["version"], created["aliases"]) == (name, 1, [label])
    assert created["sharingScope"] == "workspace" and created["latestVersion"] == 1
    if group == "beta.prompts":
        assert created["definition"]["variables"] == [{"name": "who"}]
    else:
        assert created["definition"]["assets"] == {"a.py": {"textContent": "1"}}

    assert ok("create_version", **ref, definition=second, notes="second") == {
        "version": 2,
        "deduplicated": False,
    }
    assert ok("create_version", **ref, definition=second) == {"version": 2, "deduplicated": True}
    assert [v["version"] for v in ok("list_versions", **ref)["data"]] == [2, 1]

    got = ok("get", **ref, alias=label, fields=["name", "version", "aliases"])
    assert (got["name"], got["version"], got["aliases"]) == (name, 1, [label])
    assert "definition" not in got  # projected out
    assert ok("get", **ref)["version"] == 2
    assert ok("get_version", **ref, version=1)["notes"] == "first"

    moved = ok(
        "update_version_metadata", **ref, version=2, notes="ship", aliases={"values": [label]}
    )
    assert (moved["version"], moved["notes"], moved["aliases"]) == (2, "ship", [label])
    updated = ok("update_metadata", **ref, sharing_scope="workspace", **metadata)
    for key, value in metadata.items():
        assert updated[key] == value

    page = ok(
        "list", page_size=10, alias=label, sort_by="name", sort_direction_query_parameter1="asc"
    )
    assert [item["id"] for item in page["result"]["data"]] == [created["id"]]
    assert page["result"]["data"][0]["version"] == 2

    assert ok("delete", **ref) == {}
    gone = sdk3.call(f"{group}.get", **ref)
    assert gone.status == 404
