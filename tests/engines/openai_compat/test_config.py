"""Engine construction from the catalog: base URL, key, options, and one shared client."""

from __future__ import annotations

import pytest

from maestrale.engines.openai_compat import OpenAICompatEngine, create_engine
from maestrale.engines.registry import EngineRegistry
from maestrale.engines.specs import CatalogError, ModelSpec
from tests.engines.openai_compat.conftest import MakeEngine
from tests.engines.openai_compat.support import Stub, chat_request, collect, new_tag

KEY_ENV = "MAESTRALE_TEST_STUB_KEY"


async def test_api_key_from_the_environment(
    stub: Stub, make_engine: MakeEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-test-123")
    engine = make_engine(api_key_env=KEY_ENV)
    tag = new_tag()

    await engine.chat(chat_request(f"tag:{tag}"))

    assert (await stub.record(tag))["headers"]["authorization"] == "Bearer sk-test-123"
    assert "sk-test-123" not in repr(engine.__dict__)


@pytest.mark.parametrize("api_key_env", [KEY_ENV, None])
async def test_no_authorization_without_a_key(
    stub: Stub, make_engine: MakeEngine, monkeypatch: pytest.MonkeyPatch, api_key_env: str | None
) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    engine = make_engine(api_key_env=api_key_env)
    tag = new_tag()

    await engine.chat(chat_request(f"tag:{tag}"))

    assert "authorization" not in (await stub.record(tag))["headers"]


async def test_extra_headers_option(stub: Stub, make_engine: MakeEngine) -> None:
    engine = make_engine(headers={"x-extra": "yes"})
    tag = new_tag()

    await engine.chat(chat_request(f"tag:{tag}"))

    assert (await stub.record(tag))["headers"]["x-extra"] == "yes"


async def test_one_connection_serves_sequential_calls(
    stub: Stub, engine: OpenAICompatEngine
) -> None:
    tag = new_tag()

    for _ in range(3):
        await engine.chat(chat_request(f"tag:{tag}"))
        await collect(engine.chat_stream(chat_request(f"tag:{tag}")))

    records = await stub.records(tag)
    assert len(records) == 6
    assert len({tuple(record["client"]) for record in records}) == 1


async def test_models_of_one_upstream_share_the_engine_and_its_pool(stub: Stub) -> None:
    specs = [
        ModelSpec(id=name, engine="openai_compat", base_url=stub.url, upstream_model=name)
        for name in ("model-a", "model-b")
    ]
    registry = EngineRegistry(specs)
    try:
        a, b = registry.resolve("model-a"), registry.resolve("model-b")
        assert a is not None and b is not None
        assert a.engine is b.engine
        assert isinstance(a.engine, OpenAICompatEngine)
        tag = new_tag()
        for name in ("model-a", "model-b"):
            request = chat_request(f"tag:{tag}")
            request.model = name
            await a.engine.chat(request)
        records = await stub.records(tag)
        assert [record["body"]["model"] for record in records] == ["model-a", "model-b"]
        assert records[0]["client"] == records[1]["client"]
    finally:
        await registry.aclose()


def test_base_url_is_required() -> None:
    spec = ModelSpec(id="needs-url", engine="openai_compat")

    with pytest.raises(CatalogError, match="needs-url"):
        create_engine(spec)


@pytest.mark.parametrize(
    "options",
    [{"timeout_s": 3}, {"retries": -1}, {"fim_api": "openai"}, {"max_connections": 0}],
)
def test_bad_options_are_refused(options: dict[str, object]) -> None:
    spec = ModelSpec(
        id="bad-options", engine="openai_compat", base_url="http://x/v1", options=options
    )

    with pytest.raises(CatalogError, match="bad-options"):
        create_engine(spec)


def test_base_url_must_be_http() -> None:
    spec = ModelSpec(id="ftp-model", engine="openai_compat", base_url="ftp://x/v1")

    with pytest.raises(CatalogError, match="ftp-model"):
        create_engine(spec)
