"""A chat request's prompt on the `llama_cpp` engine: its messages and tools through the model's
chat template, tokenized.

One function builds it for the chat itself and for counting its tokens (`count_prompt`, what
`/v1/responses/input_tokens` answers), so the count is the chat's `usage.prompt_tokens` by
construction rather than by a second rendering kept in step with the first.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

from maestrale.engines.local.llama_model import LoadedModel
from maestrale.engines.local.llama_tools import (
    CallGrammars,
    ToolPlan,
    describe_tools,
    plan_tools,
    template_messages,
)
from maestrale.engines.types import ChatRequest, EngineError

__all__ = ["ChatPrompt", "chat_prompt"]


@dataclass(frozen=True, slots=True)
class ChatPrompt:
    """The prompt of one chat request and how its tools take part (None: they do not)."""

    tokens: list[int]
    tools: ToolPlan | None


def chat_prompt(
    model: LoadedModel, request: ChatRequest, grammars: CallGrammars, call_budget: int
) -> ChatPrompt:
    """The prompt of `request` on `model`, a tool call taking at most `call_budget` tokens: the
    messages as `template_messages` writes them (the offered tools described in the system
    prompt), through the chat template, tokenized with the template's special tokens.

    `EngineError(400)` for no messages, messages the template rejects, or a tool_choice that
    names no offered tool. Worker thread only (the model and `grammars` live there).
    """
    # The plan decides which tools the prompt describes ("none" describes none); its grammar
    # is cached, so counting a request before running it builds it once for both.
    tools = plan_tools(request, grammars, model.vocab, call_budget)
    turns = template_messages(
        request.messages, describe_tools(tools.offered) if tools is not None else None
    )
    if not turns:
        raise EngineError(400, "messages must not be empty", code="invalid_request")
    try:
        formatted = model.formatter(messages=cast(Any, turns))
    except Exception as exc:  # a Jinja template raises what it likes
        raise EngineError(
            400,
            f"the model's chat template rejects these messages: {exc}",
            code="invalid_request",
        ) from exc
    tokens = model.llm.tokenize(
        formatted.prompt.encode("utf-8"), add_bos=not formatted.added_special, special=True
    )
    return ChatPrompt(tokens, tools)
