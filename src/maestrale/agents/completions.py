"""Deprecated `POST /v1/agents/completions`: a chat completion with an agent's model,
instructions, tools and completion arguments (request fields override the agent's)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Request, Response
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from maestrale.agents.service import AgentService
from maestrale.completions.router import respond_chat
from maestrale.completions.schemas import ChatCompletionRequest, ChatCompletionResponse, Messages
from maestrale.core.auth.dependencies import CurrentTenant
from maestrale.core.errors import MODEL_ERRORS, BadRequest, error_responses
from maestrale.core.routing import Work, domain_router
from maestrale.core.sse import streamed
from maestrale.engines.dependencies import Engines
from maestrale.gateway.dependencies import CallerDep, CorrelationId, GatewayDep
from maestrale.guardrails.schemas import Guardrails, stored
from maestrale.registries.lookup import RegistryLookup
from maestrale.registries.references import effective_instructions

router = domain_router(prefix="/agents", tags=["agents"], responses=error_responses(MODEL_ERRORS))


class AgentCompletionRequest(BaseModel):
    """A chat completion request naming an agent instead of a model."""

    model_config = ConfigDict(extra="allow")

    agent_id: str = Field(min_length=1, max_length=200)
    messages: Annotated[Messages, Field(min_length=1)]
    stream: bool = False
    guardrails: Guardrails | None = None


def chat_request(
    body: AgentCompletionRequest,
    model: str,
    instructions: str | None,
    tools: list[dict[str, Any]],
    completion_args: dict[str, Any],
    guardrails: list[dict[str, Any]] | None = None,
) -> ChatCompletionRequest:
    """The chat request of an agent completion; the agent's guardrails and the request's all
    apply."""
    given = body.model_dump(exclude_unset=True, exclude={"agent_id", "messages", "guardrails"})
    given.update(body.model_extra or {})
    messages = [m.model_dump(exclude_none=True) for m in body.messages]
    if instructions:
        messages.insert(0, {"role": "system", "content": instructions})
    values: dict[str, Any] = {**completion_args, **given, "model": model, "messages": messages}
    if "max_completion_tokens" in given and "max_tokens" not in given:
        values.pop("max_tokens", None)  # OpenAI's name of it overrides the agent's max_tokens
    values["guardrails"] = [*(guardrails or []), *(stored(body.guardrails) or [])] or None
    if "tools" not in given:
        for tool in tools:
            if tool.get("type", "function") != "function":
                raise BadRequest(
                    f"the agent's tool type {tool.get('type')!r} cannot run on this server: "
                    "only function tools are available",
                    code="tool_unavailable",
                    param="tools",
                )
        values["tools"] = [{"type": "function", "function": t["function"]} for t in tools] or None
    try:
        return ChatCompletionRequest.model_validate(values)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ()))
        raise BadRequest(
            f"invalid completion request: {where}: {first.get('msg')}", code="invalid_request"
        ) from exc


@router.post(
    "/completions",
    response_model=None,
    responses={200: streamed(ChatCompletionResponse, "JSON, or SSE chunks")},
)
async def agent_completions(
    body: AgentCompletionRequest,
    request: Request,
    work: Work,
    tenant: CurrentTenant,
    engines: Engines,
    gateway: GatewayDep,
    caller: CallerDep,
    correlation: CorrelationId,
) -> Response:
    """Deprecated: chat completion with the agent's current version (its model, instructions
    as a system message, led by its prompt and followed by its skills, tools and completion
    arguments); plain, or streamed as server-sent events ending with `data: [DONE]`."""
    service = AgentService(work.session, tenant, engines)
    agent = await service.agent(body.agent_id)
    version = await service.resolve_version(agent, None)
    lookup = RegistryLookup(work.session, tenant)
    instructions, record = await effective_instructions(
        lookup, version.instructions, version.registry_refs
    )
    chat = chat_request(
        body,
        version.model,
        instructions,
        list(version.tools or []),
        dict(version.completion_args or {}),
        version.guardrails,
    )
    if record:  # which prompt and skill versions ran, among the event's extra fields
        chat.metadata = {**(chat.metadata or {}), **record}
    return await respond_chat(request, gateway, caller, chat, correlation)
