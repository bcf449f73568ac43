"""The official SDK (mistralai==2.8.0) sends guardrails; a block is a 403 it raises as its error
type, a report comes back in ConversationResponse.guardrails."""

from __future__ import annotations

import pytest
from mistralai.client import Mistral
from mistralai.client import models as m
from mistralai.client.errors import SDKError

from tests.conformance.conftest import LiveServer

ECHO_MODERATION = "maestrale-echo-moderation"


@pytest.fixture
def sdk(live_server: LiveServer) -> Mistral:
    return Mistral(api_key=live_server.api_key, server_url=live_server.url)


def guardrail(action: str) -> m.GuardrailConfig:
    return m.GuardrailConfig(
        moderation_llm_v1=m.ModerationLlmv1Config(model_name=ECHO_MODERATION, action=action)
    )


def test_chat_complete_blocked_by_a_guardrail(sdk: Mistral) -> None:
    with pytest.raises(SDKError) as excinfo:
        sdk.chat.complete(
            model="maestrale-echo",
            messages=[{"role": "user", "content": "/flag violence_and_threats"}],
            guardrails=[guardrail("block")],
        )
    assert excinfo.value.status_code == 403
    assert "guardrail_blocked" in excinfo.value.body
    answered = sdk.chat.complete(
        model="maestrale-echo",
        messages=[{"role": "user", "content": "hello"}],
        guardrails=[guardrail("block")],
    )
    assert answered.choices[0].message.content == "echo: hello"


def test_conversation_start_reports_guardrails(sdk: Mistral) -> None:
    started = sdk.beta.conversations.start(
        model="maestrale-echo", inputs="/flag pii", guardrails=[guardrail("none")]
    )
    assert isinstance(started, m.ConversationResponse)
    assert started.guardrails is not None
    [result] = started.guardrails
    assert result["flagged_categories"] == ["pii"] and result["blocked"] is False
    with pytest.raises(SDKError) as excinfo:
        sdk.beta.conversations.start(
            model="maestrale-echo", inputs="/flag pii", guardrails=[guardrail("block")]
        )
    assert excinfo.value.status_code == 403
    with pytest.raises(SDKError) as refused:
        sdk.beta.conversations.append(
            conversation_id=started.conversation_id,
            inputs="go on",
            tool_confirmations=[
                m.ToolCallConfirmation(tool_call_id="call_1", confirmation="allow")
            ],
        )
    assert refused.value.status_code == 400 and "tool_call_not_pending" in refused.value.body
