"""The app of the fine-tuning tests: a catalog with fine-tunable models of the builtin engine
(no training runs here: no handler of the training job is registered), and the training extra
taken as installed unless a test says otherwise."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from fastapi import FastAPI

from maestrale.app import create_app
from maestrale.fine_tuning import extra
from tests.support.app_fixtures import test_settings as make_settings

CATALOG = """
[[models]]
id = "tiny-chat"
aliases = ["tiny"]
engine = "builtin"
capabilities = ["completion_chat", "fine_tuning"]
max_context_length = 4096
price = { training_per_million = 2.0 }

[[models]]
id = "small-chat"
aliases = ["platform-7b"]
name = "Small chat (builtin)"
engine = "builtin"
capabilities = ["completion_chat", "fine_tuning"]
training = { learning_rate = 1e-3, min_learning_rate = 5e-4, min_training_steps = 8 }

[[models]]
id = "tiny-classifier"
engine = "builtin"
capabilities = ["embeddings", "classification", "fine_tuning"]
max_context_length = 512

[[models]]
id = "remote-chat"
engine = "openai_compat"
base_url = "http://127.0.0.1:9/v1"
upstream_model = "remote"
capabilities = ["completion_chat", "fine_tuning"]
"""


@pytest.fixture
async def app(database_url: str, tmp_path: Path) -> AsyncIterator[FastAPI]:
    models = tmp_path / "models.toml"
    models.write_text(CATALOG)
    application = create_app(make_settings(database_url, tmp_path / "data", models=models))
    async with application.router.lifespan_context(application):
        yield application


@pytest.fixture(autouse=True)
def training_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    """The API's checks do not depend on torch being installed where the tests run."""
    monkeypatch.setattr(extra, "require", lambda job_type: None)


# `shared_app` (tests/support/app_fixtures.py) with the models catalog above.


@pytest.fixture(scope="module")
async def shared_app(
    module_database_url: str, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[FastAPI]:
    directory = tmp_path_factory.mktemp("module-app")
    models = directory / "models.toml"
    models.write_text(CATALOG)
    settings = make_settings(module_database_url, directory / "data", models=models)
    application = create_app(settings)
    async with application.router.lifespan_context(application):
        yield application
