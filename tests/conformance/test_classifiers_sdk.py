"""`client.classifiers` of mistralai 2.8.0 against a live server: moderation with the local
engine (directly and through an `openai_compat_moderation` upstream), classification with heads
trained by the tests (on the builtin feature-hashing embeddings, and with the CLI on e5)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from mistralai.client import Mistral
from mistralai.client.errors import SDKError

from maestrale.classifiers.training import train_classifier
from maestrale.engines.builtin.embeddings import embed as builtin_embed
from maestrale.engines.types import EmbeddingRequest, EmbeddingResult
from tests.conformance.conftest import LiveServer
from tests.support.app_fixtures import API_KEY
from tests.support.live import start_server, stop_server

DATA = Path(__file__).parents[1] / "classifiers" / "data" / "classifier_train.jsonl"
# Two trainings, a server start and e5 on a loaded machine can pass the default time limit.
pytestmark = pytest.mark.timeout(600)

CATALOG = """
[[models]]
id = "topics-hashing"
engine = "classifier"
capabilities = ["classification"]
options = {{ artifact = "{hashing}" }}

[[models]]
id = "topics-e5"
engine = "classifier"
capabilities = ["classification"]
options = {{ artifact = "{e5}" }}

[[models]]
id = "remote-moderation"
engine = "openai_compat_moderation"
base_url = "{upstream}/v1"
upstream_model = "maestrale-moderation"
api_key_env = "MAESTRALE_TEST_UPSTREAM_KEY"
capabilities = ["moderation"]
"""


async def _builtin(model: str, texts: list[str]) -> EmbeddingResult:
    return builtin_embed(EmbeddingRequest(model=model, inputs=texts))


def _train(embeddings: str, out: Path) -> None:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "maestrale",
            "classifier",
            "train",
            "--data",
            str(DATA),
            "--embeddings",
            embeddings,
            "--out",
            str(out),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )


@pytest.fixture(scope="module")
async def hashing(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A head on the builtin feature-hashing embeddings, trained here (the CLI trains the e5
    one: a process less to start)."""
    out = tmp_path_factory.mktemp("hashing") / "hashing.json"
    await train_classifier(DATA, embed=_builtin, embeddings_model="maestrale-embed", out=out)
    return out


@pytest.fixture(scope="module")
def server(
    live_server: LiveServer, hashing: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    root = tmp_path_factory.mktemp("classifiers")
    e5 = root / "e5.json"
    _train("multilingual-e5-small", e5)
    catalog = root / "models.toml"
    catalog.write_text(CATALOG.format(hashing=hashing, e5=e5, upstream=live_server.url), "utf-8")
    data_dir = root / "data"
    data_dir.mkdir()
    proc, url = start_server(
        data_dir, "--models", str(catalog), env={"MAESTRALE_TEST_UPSTREAM_KEY": API_KEY}
    )
    try:
        yield url
    finally:
        stop_server(proc)


def _sdk(url: str) -> Mistral:
    return Mistral(api_key=API_KEY, server_url=url)


def _top(scores: dict[str, float]) -> str:
    return max(scores.items(), key=lambda kv: kv[1])[0]


def test_moderate_and_moderate_chat(live_server: LiveServer) -> None:
    sdk = _sdk(live_server.url)
    res = sdk.classifiers.moderate(
        model="mistral-moderation-latest",
        inputs=["I will kill you and your whole family.", "Pay to GB82 WEST 1234 5698 7654 32"],
    )
    assert res.model == "mistral-moderation-latest"
    threat, iban = res.results
    assert threat.categories["violence_and_threats"] is True
    assert iban.categories["pii"] is True and iban.category_scores["pii"] >= 0.5
    assert len(threat.category_scores) == 9
    chat = sdk.classifiers.moderate_chat(
        model="maestrale-moderation",
        inputs=[
            {"role": "user", "content": "How much paracetamol can I take for a fever?"},
            {"role": "assistant", "content": "Let me explain the usual doses."},
        ],
    )
    (only,) = chat.results
    assert set(only.categories) == set(only.category_scores)


def test_moderation_through_an_upstream(server: str) -> None:
    res = _sdk(server).classifiers.moderate(
        model="remote-moderation", inputs="mail me: carol@example.net"
    )
    assert res.model == "remote-moderation"
    assert res.results[0].categories["pii"] is True


def test_classify_and_classify_chat(server: str) -> None:
    sdk = _sdk(server)
    for model in ("topics-hashing", "topics-e5"):
        res = sdk.classifiers.classify(
            model=model,
            inputs=["A brilliant goal won the match for our team", "The soup was delicious"],
        )
        sport, soup = res.results
        assert _top(sport["topic"].scores) == "sports", model
        assert _top(soup["topic"].scores) == "cooking", model
        assert set(sport) == {"sentiment", "topic"}
    chat = sdk.classifiers.classify_chat(
        model="topics-e5",
        input={"messages": [{"role": "user", "content": "My new phone's battery died, awful"}]},
    )
    (only,) = chat.results
    assert _top(only["topic"].scores) == "technology"
    assert _top(only["sentiment"].scores) == "negative"


def test_errors(server: str) -> None:
    sdk = _sdk(server)
    with pytest.raises(SDKError) as err:
        sdk.classifiers.classify(model="no-such-classifier", inputs="x")
    assert err.value.status_code == 404
    with pytest.raises(SDKError) as err:
        sdk.classifiers.moderate(model="topics-e5", inputs="x")
    assert err.value.status_code == 400
    with pytest.raises(SDKError) as err:
        sdk.classifiers.classify(model="topics-e5", inputs=[])
    assert err.value.status_code == 400
