"""How the llama.cpp engine writes a tool call: the chance the model gives to opening one, the
call's JSON written under the tools' grammar, and a drafted call under tool_choice auto (made
only when one of its values comes from the user's message: `grounded`)."""

from __future__ import annotations

import math
import threading
from dataclasses import replace

from maestrale.engines.local.llama_generate import (
    Outcome,
    Sampling,
    continuation_logprob,
    generate,
)
from maestrale.engines.local.llama_model import LoadedModel
from maestrale.engines.local.llama_tools import (
    CALL_PREFIX,
    TOOL_TAG,
    ToolPlan,
    grounded,
    parse_call,
)


def tokens(model: LoadedModel, text: str) -> list[int]:
    """`text` as the model's tokens, without BOS or special tokens."""
    return model.llm.tokenize(text.encode("utf-8"), add_bos=False, special=False)


def call_chance(model: LoadedModel, prompt: list[int], fresh: bool) -> float:
    """The probability the model gives to opening its answer to `prompt` with a tool call."""
    tag = tokens(model, TOOL_TAG)
    if len(prompt) + len(tag) >= model.n_ctx:
        return 0.0
    return math.exp(continuation_logprob(model, prompt, tag, fresh=fresh))


def write_call(
    model: LoadedModel,
    sampling: Sampling,
    prompt: list[int],
    tools: ToolPlan,
    budget: int,
    fresh: bool,
    cancel: threading.Event,
) -> tuple[str, Outcome]:
    """A call's JSON written after `prompt` under the tools' grammar, in `budget` tokens."""
    call = replace(
        sampling,
        max_tokens=budget,
        stop=[],
        grammar=tools.grammar,
        repeat_penalty=1.0,  # JSON repeats its punctuation (as for response_format)
        fresh=fresh,
    )
    outcome = Outcome()
    return "".join(generate(model, prompt, call, cancel, outcome)), outcome


def drafted_call(
    model: LoadedModel,
    prompt: list[int],
    tools: ToolPlan,
    sampling: Sampling,
    max_call_tokens: int,
    cancel: threading.Event,
) -> tuple[tuple[str, str], int] | None:
    """A call drafted under the grammar (tool_choice auto, a chance between the floor and the
    threshold), and the tokens it took, when it takes a value from the user's question
    (`grounded`); None otherwise (the draft is dropped: the answer is written in text)."""
    call_prompt = [*prompt, *tokens(model, CALL_PREFIX)]
    budget = min(sampling.max_tokens, max_call_tokens, model.n_ctx - len(call_prompt))
    if budget <= 0:
        return None
    # The context holds this request's prompt, evaluated for the decision: reused.
    written, outcome = write_call(model, sampling, call_prompt, tools, budget, False, cancel)
    parsed = parse_call(written) if outcome.finish_reason == "stop" else None
    if parsed is None or not grounded(parsed[1], tools.asked):
        return None
    return parsed, outcome.completion_tokens
