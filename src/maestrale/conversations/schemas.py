"""Wire models of the /v1/conversations group (the SDK's ConversationRequest,
ConversationAppendRequest, ConversationRestartRequest, ConversationResponse,
AgentConversation / ModelConversation, ConversationHistory, ConversationMessages)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from maestrale.agents.schemas import AgentToolIn, CompletionArgsIn
from maestrale.core.sizes import MAX_CONVERSATION_INPUTS, at_most
from maestrale.guardrails.schemas import Guardrails

HandoffExecution = Literal["client", "server"]
Inputs = (
    str
    | Annotated[
        list[dict[str, Any]],
        at_most(MAX_CONVERSATION_INPUTS, "inputs"),
        Field(max_length=MAX_CONVERSATION_INPUTS),
    ]
)


class _In(BaseModel):
    model_config = ConfigDict(extra="ignore")


class ConversationStart(_In):
    inputs: Inputs
    stream: bool = False
    store: bool | None = None
    handoff_execution: HandoffExecution | None = None
    instructions: str | None = None
    tools: list[AgentToolIn] | None = Field(default=None, max_length=128)
    completion_args: CompletionArgsIn | None = None
    guardrails: Guardrails | None = None
    name: str | None = None
    description: str | None = None
    metadata: dict[str, Any] | None = None
    agent_id: str | None = Field(default=None, max_length=200)
    agent_version: str | int | None = None
    model: str | None = Field(default=None, max_length=256)


class _Continuation(_In):
    inputs: Inputs | None = None
    stream: bool = False
    store: bool = True
    handoff_execution: HandoffExecution = "server"
    completion_args: CompletionArgsIn | None = None


class ToolCallConfirmation(_In):
    tool_call_id: str = Field(min_length=1, max_length=256)
    confirmation: Literal["allow", "deny"]


class ConversationAppend(_Continuation):
    tool_confirmations: list[ToolCallConfirmation] | None = Field(default=None, max_length=128)


class ConversationRestart(_Continuation):
    from_entry_id: str = Field(min_length=1, max_length=64)
    guardrails: Guardrails | None = None
    metadata: dict[str, Any] | None = None
    agent_version: str | int | None = None


class UsageOut(BaseModel):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0


class ConversationResponse(BaseModel):
    object: Literal["conversation.response"] = "conversation.response"
    conversation_id: str
    outputs: list[dict[str, Any]]
    usage: UsageOut
    guardrails: list[dict[str, Any]] | None = None


class ConversationHistory(BaseModel):
    object: Literal["conversation.history"] = "conversation.history"
    conversation_id: str
    entries: list[dict[str, Any]]


class ConversationMessages(BaseModel):
    object: Literal["conversation.messages"] = "conversation.messages"
    conversation_id: str
    messages: list[dict[str, Any]]
