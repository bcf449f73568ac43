"""image_generation against an OpenAI-compatible images server the tests run: the image stored
as a Files API file of the caller's workspace only, `url` answers fetched through the SSRF
guard, answers that are not images refused, the missing configuration named."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi import FastAPI

from maestrale.conversations.server_tools import ToolUnavailable
from maestrale.core.auth.principal import Tenant
from maestrale.services import Services
from maestrale.tools.images import ImageGeneration
from maestrale.tools.toolboxes import BuiltinToolboxes
from tests.support.app_fixtures import TenantKey, make_client
from tests.support.mcp_servers import serve_asgi
from tests.tools.images.images_server import ImagesProbe, images_app, png
from tests.tools.web.contexts import tool_context

KEY_ENV = "MAESTRALE_TEST_IMAGES_KEY"
KEY = "sk-test-images-0123456789abcdefghijkl"
MODEL = "test-image-1"

Server = tuple[str, ImagesProbe]


@pytest.fixture(scope="module")
def images_server() -> Iterator[Server]:
    probe = ImagesProbe()
    with serve_asgi(images_app(probe)) as base:
        yield base, probe


@pytest.fixture(autouse=True)
def api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)


@pytest.fixture
def services(app: FastAPI) -> Services:
    services: Services = app.state.services
    return services


def configured(base: str, mode: str, **settings: Any) -> dict[str, Any]:
    return {
        "image_generation_url": f"{base}/{mode}/v1",
        "image_generation_model": MODEL,
        "image_generation_api_key_env": KEY_ENV,
        **settings,
    }


async def generate(
    services: Services, tenant: Tenant, arguments: dict[str, Any], **settings: Any
) -> Any:
    tool = ImageGeneration()
    return await tool.run(tool_context(services, tenant, tool.type, **settings), arguments)


async def file_count(app: FastAPI) -> int:
    async with make_client(app) as client:
        listed = await client.get("/v1/files", params={"page_size": 100})
    assert listed.status_code == 200, listed.text
    return int(listed.json()["total"])


async def test_the_missing_configuration_is_named(
    services: Services, tenant: Tenant, monkeypatch: pytest.MonkeyPatch
) -> None:
    tool = ImageGeneration()

    def reason(**settings: Any) -> str | None:
        return tool.unavailable(
            tool_context(services, tenant, tool.type, **settings).services.settings
        )

    unset = reason()
    assert unset is not None
    assert "MAESTRALE_IMAGE_GENERATION_URL" in unset
    no_model = reason(image_generation_url="http://images.test/v1")
    assert no_model is not None
    assert "MAESTRALE_IMAGE_GENERATION_MODEL" in no_model
    complete = {"image_generation_url": "http://images.test/v1", "image_generation_model": MODEL}
    assert reason(**complete) is None
    assert reason(**complete, image_generation_api_key_env=KEY_ENV) is None
    monkeypatch.delenv(KEY_ENV)
    no_key = reason(**complete, image_generation_api_key_env=KEY_ENV)
    assert no_key is not None
    assert KEY_ENV in no_key
    # A call made anyway fails with the same words; offering the tool is a 400.
    outcome = await generate(services, tenant, {"prompt": "a cat"})
    assert outcome.error == unset
    toolboxes = BuiltinToolboxes(services, {tool.type: tool})
    async with services.db.transaction() as work:
        with pytest.raises(ToolUnavailable) as raised:
            await toolboxes.build(work, tenant, [{"type": "image_generation"}])
    assert raised.value.status_code == 400
    assert "MAESTRALE_IMAGE_GENERATION_URL" in raised.value.message


def test_offered_function() -> None:
    offered = ImageGeneration(["1024x1024", "512x512"]).offer({"type": "image_generation"})
    assert offered.name == "image_generation"
    assert offered.parameters["required"] == ["prompt"]
    assert offered.parameters["properties"]["size"]["enum"] == ["1024x1024", "512x512"]
    assert "enum" not in ImageGeneration().offer({}).parameters["properties"]["size"]


async def test_the_image_is_a_file_of_the_callers_workspace_only(
    app: FastAPI,
    services: Services,
    tenant: Tenant,
    other: TenantKey,
    images_server: Server,
) -> None:
    base, probe = images_server
    outcome = await generate(
        services, tenant, {"prompt": "  a red square  "}, **configured(base, "b64")
    )
    assert outcome.error is None, outcome.output
    # What the upstream was sent.
    sent = probe.requests[-1]
    assert sent["authorization"] == f"Bearer {KEY}"
    assert sent["body"] == {
        "model": MODEL,
        "prompt": "a red square",
        "n": 1,
        "size": "1024x1024",
        "response_format": "b64_json",
    }
    # What the model reads and the answer carries.
    (chunk,) = outcome.files
    file_id, file_name = chunk["file_id"], chunk["file_name"]
    assert chunk == {
        "type": "tool_file",
        "tool": "image_generation",
        "file_id": file_id,
        "file_name": file_name,
        "file_type": "png",
    }
    assert file_name.endswith(".png")
    assert "64x48 PNG image" in outcome.output
    assert file_name in outcome.output
    assert "A red rectangle, flat colour." in outcome.output
    assert outcome.references == []
    info = outcome.info
    assert (info["model"], info["size"], info["file_id"]) == (MODEL, "1024x1024", file_id)
    assert (info["mimetype"], info["width"], info["height"]) == ("image/png", 64, 48)
    assert info["revised_prompt"] == "A red rectangle, flat colour."
    assert KEY not in repr(outcome)
    # The caller's workspace has the file; another workspace's key gets 404 on it.
    async with make_client(app) as mine:
        detail = await mine.get(f"/v1/files/{file_id}")
        assert detail.status_code == 200, detail.text
        assert detail.json()["filename"] == file_name
        content = await mine.get(f"/v1/files/{file_id}/content")
        assert content.status_code == 200
        assert content.content == png()
    async with make_client(app, other.key) as theirs:
        assert (await theirs.get(f"/v1/files/{file_id}")).status_code == 404
        assert (await theirs.get(f"/v1/files/{file_id}/content")).status_code == 404
        assert (await theirs.delete(f"/v1/files/{file_id}")).status_code == 404
        listed = await theirs.get("/v1/files")
        assert file_id not in {f["id"] for f in listed.json()["data"]}


async def test_url_answers_and_other_formats(
    services: Services, tenant: Tenant, images_server: Server
) -> None:
    base, probe = images_server
    downloads = probe.downloads
    fetched = await generate(
        services, tenant, {"prompt": "p"},
        **configured(base, "url", image_generation_allow_private=True),
    )  # fmt: skip
    assert fetched.error is None, fetched.output
    assert probe.downloads == downloads + 1
    assert fetched.info["width"] == 64
    inline = await generate(services, tenant, {"prompt": "p"}, **configured(base, "data-url"))
    assert inline.error is None, inline.output
    assert (inline.info["width"], inline.info["height"]) == (8, 8)
    photo = await generate(services, tenant, {"prompt": "p"}, **configured(base, "jpeg"))
    assert photo.error is None, photo.output
    assert photo.files[0]["file_type"] == "jpg"
    assert photo.files[0]["file_name"].endswith(".jpg")
    assert photo.info["mimetype"] == "image/jpeg"


@pytest.mark.parametrize("mode", ["url", "mapped-url", "metadata-url"])
async def test_an_image_url_on_a_private_address_is_not_fetched(
    app: FastAPI, services: Services, tenant: Tenant, images_server: Server, mode: str
) -> None:
    base, probe = images_server
    downloads, files = probe.downloads, await file_count(app)
    outcome = await generate(services, tenant, {"prompt": "p"}, **configured(base, mode))
    assert outcome.error is not None
    assert "was not fetched" in outcome.error
    assert "loopback, private, link-local or reserved" in outcome.error
    assert outcome.files == []
    assert probe.downloads == downloads
    assert await file_count(app) == files


@pytest.mark.parametrize(
    ("mode", "message"),
    [
        ("text", "not an image: its bytes are not a PNG, JPEG, WebP or GIF image"),
        ("fake-png", "not an image: it cannot be read as a PNG image"),
        ("html-url", "not an image: its bytes are not a PNG"),
        ("huge", "answered more than"),
        ("not-base64", "a `b64_json` that is not base64"),
        ("empty", "answered no image"),
        ("neither", "answered neither `b64_json` nor `url`"),
    ],
)
async def test_answers_that_are_not_images_are_refused(
    app: FastAPI,
    services: Services,
    tenant: Tenant,
    images_server: Server,
    mode: str,
    message: str,
) -> None:
    base, _ = images_server
    files = await file_count(app)
    settings = configured(
        base, mode, image_generation_allow_private=True, image_generation_max_bytes=1_000_000
    )
    outcome = await generate(services, tenant, {"prompt": "p"}, **settings)
    assert outcome.error is not None
    assert message in outcome.error
    assert outcome.output == f"error: {outcome.error}"
    assert outcome.files == []
    assert await file_count(app) == files


async def test_an_upstream_error_never_repeats_the_key(
    services: Services, tenant: Tenant, images_server: Server
) -> None:
    base, _ = images_server
    outcome = await generate(services, tenant, {"prompt": "p"}, **configured(base, "unauthorized"))
    assert outcome.error is not None
    assert outcome.error.startswith("the images upstream answered HTTP 401: Incorrect API key")
    assert "[redacted]" in outcome.error
    assert KEY not in repr(outcome)


async def test_a_slow_upstream_gives_an_error_in_bounded_time(
    services: Services, tenant: Tenant, images_server: Server
) -> None:
    base, _ = images_server
    started = time.monotonic()
    outcome = await generate(
        services, tenant, {"prompt": "p"},
        **configured(base, "slow", image_generation_timeout_seconds=1.0),
    )  # fmt: skip
    assert outcome.error is not None
    assert "within 1 s" in outcome.error
    assert time.monotonic() - started < 30  # loose: a loaded machine


async def test_sizes(services: Services, tenant: Tenant, images_server: Server) -> None:
    base, probe = images_server
    refused = await generate(services, tenant, {"prompt": "p", "size": "512x512"})
    assert refused.error == "`size` must be one of 1024x1024"
    sizes = {"image_generation_sizes": ["1024x1024", "512x512"]}
    chosen = await generate(
        services, tenant, {"prompt": "p", "size": "512x512"}, **configured(base, "b64", **sizes)
    )
    assert chosen.error is None, chosen.output
    assert probe.requests[-1]["body"]["size"] == "512x512"


@pytest.mark.parametrize("prompt", [None, 7, "", "  ", "x" * 4001])
async def test_bad_prompts(
    services: Services, tenant: Tenant, images_server: Server, prompt: Any
) -> None:
    base, probe = images_server
    sent = len(probe.requests)
    outcome = await generate(services, tenant, {"prompt": prompt}, **configured(base, "b64"))
    assert outcome.error is not None
    assert "`prompt`" in outcome.error
    assert len(probe.requests) == sent
