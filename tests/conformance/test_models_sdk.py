"""The official SDK (mistralai==2.8.0) drives the models group of a live server."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from mistralai.client import Mistral
from mistralai.client import models as m
from mistralai.client.errors import SDKError

from maestrale.catalog.tables import FineTunedModel
from maestrale.core.db import Database
from tests.catalog.factories import create_fine_tuned
from tests.conformance.conftest import LiveServer
from tests.support.app_fixtures import default_tenant


@pytest.fixture
def sdk(live_server: LiveServer) -> Mistral:
    return Mistral(api_key=live_server.api_key, server_url=live_server.url)


@pytest.fixture
async def fine_tuned(live_server: LiveServer) -> AsyncIterator[FineTunedModel]:
    db = Database(live_server.database_url)
    try:
        yield await create_fine_tuned(db, await default_tenant(db))
    finally:
        await db.dispose()


def test_list_and_retrieve(sdk: Mistral, fine_tuned: FineTunedModel) -> None:
    listing = sdk.models.list()
    by_id = {
        card.id: card
        for card in listing.data or []
        if isinstance(card, m.BaseModelCard | m.FTModelCard)
    }
    assert isinstance(by_id["maestrale-echo"], m.BaseModelCard)
    assert by_id["maestrale-echo"].capabilities.completion_chat is True
    assert isinstance(by_id[fine_tuned.id], m.FTModelCard)
    card = sdk.models.retrieve(model_id="maestrale-echo")
    assert isinstance(card, m.BaseModelCard)
    assert card.aliases == ["echo"]
    ft = sdk.models.retrieve(model_id=fine_tuned.id)
    assert isinstance(ft, m.FTModelCard)
    assert ft.root == "maestrale-echo"


def test_update_archive_unarchive_delete(sdk: Mistral, fine_tuned: FineTunedModel) -> None:
    updated = sdk.models.update(model_id=fine_tuned.id, name="renamed", description="new")
    assert isinstance(updated, m.CompletionFineTunedModel)
    assert updated.name == "renamed"
    archived = sdk.models.archive(model_id=fine_tuned.id)
    assert archived.archived is True
    unarchived = sdk.models.unarchive(model_id=fine_tuned.id)
    assert unarchived.archived is False
    deleted = sdk.models.delete(model_id=fine_tuned.id)
    assert deleted.deleted is True
    with pytest.raises(SDKError) as err:
        sdk.models.retrieve(model_id=fine_tuned.id)
    assert err.value.status_code == 404


def test_wrong_key_is_refused(live_server: LiveServer) -> None:
    sdk = Mistral(api_key="wrong", server_url=live_server.url)
    with pytest.raises(SDKError) as err:
        sdk.models.list()
    assert err.value.status_code == 401


def test_base_model_delete_is_a_clear_4xx(sdk: Mistral) -> None:
    with pytest.raises(SDKError) as err:
        sdk.models.delete(model_id="maestrale-echo")
    assert err.value.status_code == 400
    assert "base model" in err.value.body


async def test_async_client(live_server: LiveServer) -> None:
    async with Mistral(api_key=live_server.api_key, server_url=live_server.url) as sdk:
        listing = await sdk.models.list_async()
    assert any(
        isinstance(card, m.BaseModelCard) and card.id == "maestrale-echo"
        for card in listing.data or []
    )
