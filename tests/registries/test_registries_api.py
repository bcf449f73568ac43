"""The prompts and skills registries over HTTP: an object's life, unique names, immutable and
deduplicated versions, aliases that move, reads by version, alias and projection, and the
validation of what a definition may hold."""

from __future__ import annotations

import httpx
import pytest

from tests.registries.support import create, new_version, ok, prompt


async def test_a_prompt_from_create_to_delete(client: httpx.AsyncClient) -> None:
    created = await prompt(
        client, "greeting", "Hello {{ who }}", title="Greeting", description="says hi", notes="v1"
    )
    assert created["definition"] == {
        "content": "Hello {{ who }}",
        "variables": [{"name": "who"}],
    }
    assert (created["version"], created["latestVersion"], created["notes"]) == (1, 1, "v1")
    assert (created["sharingScope"], created["workspaceRelation"]) == ("workspace", "writer")
    assert created["createdBy"] and created["createdAt"] == created["versionCreatedAt"]
    by_id = await ok(client.get(f"/v2/prompts/{created['id']}"))
    assert by_id == created == await ok(client.get("/v2/prompts/greeting"))  # or by name

    patched = await ok(
        client.patch("/v2/prompts/greeting", json={"title": "Hello", "description": None})
    )
    assert patched["title"] == "Hello" and "description" not in patched
    assert patched["updatedAt"] > created["updatedAt"]

    assert await ok(client.delete(f"/v2/prompts/{created['id']}")) == {}
    gone = await client.get(f"/v2/prompts/{created['id']}")
    assert gone.status_code == 404 and gone.json()["code"] == "not_found"
    assert (await client.get(f"/v2/prompts/{created['id']}/versions")).status_code == 404
    again = await prompt(client, "greeting")  # the name is free again
    assert again["version"] == 1


async def test_a_name_is_unique_per_workspace_and_kind(client: httpx.AsyncClient) -> None:
    await prompt(client, "support")
    taken = await client.post(
        "/v2/prompts", json={"name": "support", "definition": {"content": "x"}}
    )
    assert taken.status_code == 409 and taken.json()["code"] == "name_taken"
    # A skill may share a prompt's name.
    await create(client, "skills", "support", {"description": "d", "body": "b"})


async def test_a_reference_that_is_an_id_and_another_name_is_ambiguous(
    client: httpx.AsyncClient,
) -> None:
    first = await prompt(client, "first")
    await prompt(client, first["id"], "named after the first's id")
    clash = await client.get(f"/v2/prompts/{first['id']}")
    assert clash.status_code == 409 and clash.json()["code"] == "ambiguous_reference"


async def test_versions_are_appended_and_deduplicated(client: httpx.AsyncClient) -> None:
    first = await prompt(client, "p", "one")
    assert await new_version(client, "p", "two", notes="second") == {
        "version": 2,
        "deduplicated": False,
    }
    # The latest definition again (variables derived the same): nothing is added.
    assert await new_version(client, "p", "two", notes="ignored") == {
        "version": 2,
        "deduplicated": True,
    }
    # The first definition again is a new version: only the latest is compared.
    assert (await new_version(client, "p", "one"))["version"] == 3
    versions = (await ok(client.get("/v2/prompts/p/versions")))["data"]
    assert [(v["version"], v["definition"]["content"]) for v in versions] == [
        (3, "one"),
        (2, "two"),
        (1, "one"),
    ]
    assert versions[1]["notes"] == "second"
    # Immutable: the first version still reads as created.
    v1 = await ok(client.get("/v2/prompts/p/versions/1"))
    assert v1["definition"] == first["definition"] and v1["latestVersion"] == 3


async def test_aliases_move_between_versions(client: httpx.AsyncClient) -> None:
    await prompt(client, "p", "one", aliases=["production", "stable"])
    await new_version(client, "p", "two", aliases=["production"])
    versions = (await ok(client.get("/v2/prompts/p/versions")))["data"]
    assert {v["version"]: v["aliases"] for v in versions} == {2: ["production"], 1: ["stable"]}

    # Exactly these aliases on version 1: production moves back, stable stays.
    back = await ok(
        client.patch(
            "/v2/prompts/p/versions/1", json={"aliases": {"values": ["production", "stable"]}}
        )
    )
    assert back["aliases"] == ["production", "stable"] and back["version"] == 1
    # Absent: unchanged; notes change alone.
    noted = await ok(client.patch("/v2/prompts/p/versions/1", json={"notes": "good one"}))
    assert (noted["notes"], noted["aliases"]) == ("good one", ["production", "stable"])
    # Empty values: cleared.
    cleared = await ok(client.patch("/v2/prompts/p/versions/1", json={"aliases": {"values": []}}))
    assert cleared["aliases"] == []
    versions = (await ok(client.get("/v2/prompts/p/versions")))["data"]
    assert all(v["aliases"] == [] for v in versions)

    missing = await client.patch("/v2/prompts/p/versions/9", json={"notes": "x"})
    assert missing.status_code == 404

    # At most 20 aliases an object: a 21st is refused, and the version it came with too.
    await ok(
        client.patch(
            "/v2/prompts/p/versions/1", json={"aliases": {"values": [f"a{i}" for i in range(20)]}}
        )
    )
    over = await client.post(
        "/v2/prompts/p/versions", json={"definition": {"content": "3"}, "aliases": ["one-more"]}
    )
    assert over.status_code == 422 and over.json()["detail"][0]["loc"] == ["body", "aliases"]
    assert (await ok(client.get("/v2/prompts/p")))["latestVersion"] == 2


async def test_get_by_version_alias_and_projection(client: httpx.AsyncClient) -> None:
    await prompt(client, "p", "one {{a}}", aliases=["production"])
    await new_version(client, "p", "two {{b}}")
    assert (await ok(client.get("/v2/prompts/p")))["version"] == 2
    assert (await ok(client.get("/v2/prompts/p", params={"version": 1})))["version"] == 1
    pinned = await ok(client.get("/v2/prompts/p", params={"alias": "production"}))
    assert (pinned["version"], pinned["aliases"]) == (1, ["production"])
    projected = await ok(
        client.get(
            "/v2/prompts/p", params=[("fields", "definition.variables"), ("fields", "created_at")]
        )
    )
    assert set(projected) == {"id", "definition", "createdAt"}
    assert projected["definition"] == {"variables": [{"name": "b"}]}
    version = await ok(client.get("/v2/prompts/p/versions/1", params={"fields": "name,version"}))
    assert set(version) == {"id", "name", "version"} and version["version"] == 1

    for params in ({"version": 3}, {"alias": "nope"}):
        assert (await client.get("/v2/prompts/p", params=params)).status_code == 404
    bad = await client.get("/v2/prompts/p", params={"fields": "definition.secret"})
    assert bad.status_code == 400 and bad.json()["param"] == "fields"


async def test_prompt_variables_are_derived_or_checked(client: httpx.AsyncClient) -> None:
    derived = await prompt(client, "d", "{{b}} {{ a }} {{b}} {{ not-a-var }} {x}")
    assert derived["definition"]["variables"] == [{"name": "b"}, {"name": "a"}]
    declared = await create(
        client,
        "prompts",
        "e",
        {"content": "{{a}}", "variables": [{"name": "a"}, {"name": "unused"}]},
    )
    assert declared["definition"]["variables"] == [{"name": "a"}, {"name": "unused"}]
    undeclared = await client.post(
        "/v2/prompts",
        json={
            "name": "f",
            "definition": {"content": "{{a}} {{ b }}", "variables": [{"name": "a"}]},
        },
    )
    assert undeclared.status_code == 400 and undeclared.json()["code"] == "undeclared_variable"
    assert "'b'" in undeclared.json()["message"]


async def test_skills_store_assets_and_list_only_descriptions(client: httpx.AsyncClient) -> None:
    definition = {
        "description": "Formats tables",
        "body": "Use the script.",
        "assets": {
            "scripts/fmt.py": {"textContent": "print(1)", "isExecutable": True},
            "logo.png": {"rawContent": "iVBORw0KGgo="},
        },
    }
    created = await create(client, "skills", "tables", definition)
    assert created["definition"] == definition and "title" not in created
    listed = (await ok(client.get("/v2/skills")))["data"]
    assert listed[0]["definition"] == {"description": "Formats tables"}
    described = await ok(client.get("/v2/skills", params={"fields": "definition.description"}))
    assert described["data"] == [
        {"id": created["id"], "definition": {"description": "Formats tables"}}
    ]
    refused = await client.get("/v2/skills", params={"fields": "definition.body"})
    assert refused.status_code == 400
    # One skill at a time, the whole definition.
    assert (await ok(client.get("/v2/skills/tables")))["definition"] == definition


BIG = "x" * (256 * 1024 + 1)


@pytest.mark.parametrize(
    ("kind", "body", "status"),
    [
        ("prompts", {"name": "bad name", "definition": {"content": "x"}}, 422),
        ("prompts", {"name": "", "definition": {"content": "x"}}, 422),
        ("prompts", {"name": "n" * 129, "definition": {"content": "x"}}, 422),
        ("prompts", {"name": "p", "definition": {"content": BIG}}, 422),
        ("prompts", {"name": "p", "definition": {"content": "é" * 140_000}}, 422),  # bytes
        (
            "prompts",
            {"name": "p", "definition": {"content": " ".join(f"{{{{v{i}}}}}" for i in range(101))}},
            422,
        ),
        (
            "prompts",
            {"name": "p", "definition": {"content": "x", "variables": [{"name": "1x"}]}},
            422,
        ),
        (
            "prompts",
            {"name": "p", "definition": {"content": "x", "variables": [{"name": "a"}] * 2}},
            422,
        ),
        ("prompts", {"name": "p", "definition": {"content": "x"}, "aliases": ["a b"]}, 422),
        (
            "prompts",
            {"name": "p", "definition": {"content": "x"}, "aliases": [f"a{i}" for i in range(21)]},
            422,
        ),
        ("prompts", {"name": "p", "definition": {"content": "x"}, "sharingScope": "world"}, 422),
        ("prompts", '{"name": "p", "definition": {"content": "\\ud800"}}', 422),
        ("prompts", {"name": "p", "definition": {"content": "x"}, "notes": 2**70}, 422),
        (
            "skills",
            {
                "name": "s",
                "definition": {"assets": {f"f{i}": {"textContent": ""} for i in range(101)}},
            },
            422,
        ),
        (
            "skills",
            {
                "name": "s",
                "definition": {
                    "assets": {
                        f"f{i}": {"rawContent": "A" * (4 * 1024 * 1024 + 1)} for i in range(2)
                    }
                },
            },
            422,
        ),
        ("skills", {"name": "s", "definition": {"assets": {"../etc": {"textContent": ""}}}}, 422),
        ("skills", {"name": "s", "definition": {"assets": {"/abs": {"textContent": ""}}}}, 422),
        ("skills", {"name": "s", "definition": {"assets": {"a": {"other": ""}}}}, 422),
        ("skills", {"name": "s", "definition": {"body": BIG}}, 422),
    ],
)
async def test_bad_definitions_are_refused(
    client: httpx.AsyncClient, kind: str, body: object, status: int
) -> None:
    if isinstance(body, str):  # what httpx would not encode (a lone surrogate's escape)
        headers = {"content-type": "application/json"}
        resp = await client.post(f"/v2/{kind}", content=body, headers=headers)
    else:
        resp = await client.post(f"/v2/{kind}", json=body)
    assert resp.status_code == status, resp.text
    assert resp.json()["detail"]
    assert (await ok(client.get(f"/v2/{kind}"))) == {"data": []}  # nothing stored


async def test_hostile_paths_and_queries(client: httpx.AsyncClient) -> None:
    await prompt(client, "p")
    for url in (
        "/v2/prompts/p/versions/99999999999999999999999",
        "/v2/prompts/p?version=99999999999999999999999",
        "/v2/prompts/p/versions/0",
        "/v2/prompts?pageSize=201",
        "/v2/prompts?pageSize=0",
        "/v2/prompts?sort.field=by_mood",
    ):
        assert (await client.get(url)).status_code in (400, 422), url
    for token in ("not-a-token!", "eyJrIjoibmFtZSJ9", "A" * 1500):
        resp = await client.get("/v2/prompts", params={"pageToken": token})
        assert resp.status_code == 400 and resp.json()["code"] == "invalid_page_token", token
    # A version past the last is a 404, a name that no object has too.
    assert (await client.get("/v2/prompts/p/versions/2")).status_code == 404
    assert (await client.get("/v2/prompts/%F0%9F%98%80")).status_code == 404
