"""Wire models of the /v1/conversations group (the SDK's ConversationRequest,
ConversationAppendRequest, ConversationRestartRequest, ConversationResponse,
AgentConversation / ModelConversation, ConversationHistory, ConversationMessages), and the
shapes of the reads built straight from the rows (`describe`, `listing_json`)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field

from maestrale.agents.schemas import AgentToolIn, CompletionArgsIn
from maestrale.conversations.tables import Conversation
from maestrale.core.sizes import MAX_CONVERSATION_INPUTS, at_most
from maestrale.guardrails.schemas import Guardrails
from maestrale.registries.references import MAX_SKILLS, PromptRef, SkillRef

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
    # This server's extension (as on agents): a stored prompt and skills for a model; for an
    # agent, `prompt.variables` only, which fill its prompt.
    prompt: PromptRef | None = None
    skills: list[SkillRef] | None = Field(default=None, max_length=MAX_SKILLS)


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


def describe(row: Conversation) -> dict[str, Any]:
    """The AgentConversation or ModelConversation shape (told apart by `agent_id` / `model`),
    with the prompt and skills references it was started with, if any."""
    common = {
        "object": "conversation",
        "id": row.id,
        "created_at": row.created_at,
        "updated_at": row.updated_at,
        "name": row.name,
        "description": row.description,
        "metadata": row.meta,
        **(row.registry_refs or {}),
    }
    if row.agent_id is not None:
        return {**common, "agent_id": row.agent_id, "agent_version": row.agent_version}
    return {
        **common,
        "model": row.model,
        "instructions": row.instructions,
        "tools": row.tools,
        "completion_args": row.completion_args,
        "guardrails": row.guardrails,
    }


def listing_json(kind: str, conversation_id: str, field: str, texts: list[str]) -> bytes:
    """A history body, its entries spliced in as stored (each a JSON object written by this
    server): parsing and re-encoding thousands of entries was most of the cost of a read."""
    head = orjson.dumps({"object": kind, "conversation_id": conversation_id})
    return b"".join((head[:-1], b',"', field.encode(), b'":[', ",".join(texts).encode(), b"]}"))
