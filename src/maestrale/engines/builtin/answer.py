"""What the builtin engine answers to a request, before it is shaped as a result or a stream.

Side effects (`/sleep`, `/fail`) happen here, so they take place before a stream sends anything.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from maestrale.engines.builtin.directives import Directives, parse_directives
from maestrale.engines.builtin.json_schema import smallest_instance
from maestrale.engines.builtin.messages import (
    offered_tool_names,
    prompt_tokens,
    turn_to_answer,
)
from maestrale.engines.builtin.tokens import apply_limits, count_tokens
from maestrale.engines.text import content_text
from maestrale.engines.types import ChatRequest, EngineError, FimRequest, Message, TextRequest

T = TypeVar("T")

# Above this many characters of input, a request is tokenized and answered in a thread.
OFF_LOOP_CHARS = 64 * 1024

_ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


@dataclass(slots=True, frozen=True)
class Answer:
    """One choice's answer, repeated `n` times, and the usage figures it implies."""

    content: str
    tool_calls: list[dict[str, Any]] | None
    finish_reason: str
    n: int
    prompt_tokens: int
    completion_tokens: int  # of one choice

    def message(self) -> dict[str, Any]:
        """The assistant message of one choice, in wire format."""
        return {"role": "assistant", "content": self.content, "tool_calls": self.tool_calls}


def tool_call_id(seed: str) -> str:
    """A 9-character alphanumeric id derived from `seed` (same seed, same id)."""
    number = int.from_bytes(hashlib.blake2b(seed.encode(), digest_size=8).digest(), "big")
    chars = []
    for _ in range(9):
        number, digit = divmod(number, len(_ALPHABET))
        chars.append(_ALPHABET[digit])
    return "".join(chars)


async def _side_effects(directives: Directives) -> None:
    if directives.sleep_ms > 0:
        await asyncio.sleep(directives.sleep_ms / 1000)
    if directives.fail_status is not None:
        status = directives.fail_status
        raise EngineError(
            status, f"builtin engine failure requested: {status}", code="upstream_error"
        )


def _formatted(text: str, response_format: dict[str, Any] | None, plain: str) -> str:
    """`plain` as the answer in text mode, or `text` rendered as the requested JSON."""
    kind = (response_format or {}).get("type")
    if kind == "json_schema":
        spec = (response_format or {}).get("json_schema")
        if isinstance(spec, dict) and "schema" in spec:
            return json.dumps(smallest_instance(spec["schema"]))
        # A json_schema format without a schema constrains nothing beyond JSON itself.
        return json.dumps({"echo": text})
    if kind == "json_object":
        return json.dumps({"echo": text})
    return plain


@dataclass(slots=True, frozen=True)
class _Plan:
    """What a request asks, read before its side effects: the prompt's tokens, and either the
    answer already (tool results) or the directives of the text to answer."""

    prompt: int
    answer: Answer | None = None
    directives: Directives | None = None


def _plan_chat(request: ChatRequest) -> _Plan:
    n = max(request.n, 1)
    prompt = prompt_tokens(request.messages)
    turn = turn_to_answer(request.messages)
    if turn.tool_results:
        names = offered_tool_names(request.tools, request.tool_choice)
        if names and _forced(request.tool_choice):
            # A forced choice must be answered with a call, even after tool results: as a small
            # model under it does, the engine calls again what the last user message asked for.
            calls = parse_directives(_last_user_text(request.messages), names).calls
            if calls:
                return _Plan(prompt, directives=Directives(text="", calls=calls))
        text = "\n".join(f"tool {name} returned: {content}" for name, content in turn.tool_results)
        content = _formatted(text, request.response_format, plain=text)
        return _Plan(prompt, answer=_limited(content, request.max_tokens, request.stop, n, prompt))
    names = offered_tool_names(request.tools, request.tool_choice)
    return _Plan(prompt, directives=parse_directives(turn.text, names))


def _forced(tool_choice: Any) -> bool:
    """Whether `tool_choice` demands a call ("any", "required" or a named function)."""
    return tool_choice in ("any", "required") or isinstance(tool_choice, dict)


def _last_user_text(messages: list[Message]) -> str:
    for message in reversed(messages):
        if message.get("role") == "user":
            return content_text(message.get("content"))
    return ""


def _answer_chat(request: ChatRequest, prompt: int, directives: Directives) -> Answer:
    n = max(request.n, 1)
    if directives.calls:
        specs = directives.calls if request.parallel_tool_calls else directives.calls[:1]
        calls = [
            {
                "id": tool_call_id(f"{len(request.messages)}:{i}:{spec.name}:{spec.arguments}"),
                "type": "function",
                "function": {"name": spec.name, "arguments": spec.arguments},
                "index": i,
            }
            for i, spec in enumerate(specs)
        ]
        return Answer("", calls, "tool_calls", n, prompt, count_tokens(json.dumps(calls)))
    response = directives.response
    if response is not None:
        content = response
    else:
        text = directives.text
        content = _formatted(text, request.response_format, plain=f"echo: {text}")
    return _limited(content, request.max_tokens, request.stop, n, prompt)


def _limited(content: str, max_tokens: int | None, stop: list[str], n: int, prompt: int) -> Answer:
    content, finish = apply_limits(content, max_tokens, stop)
    return Answer(content, None, finish, n, prompt, count_tokens(content))


async def _run(large: bool, work: Callable[..., T], *args: Any) -> T:
    """`work(*args)`, in a thread when its input is large: tokenizing megabytes takes the
    event loop for a second, and every other request with it."""
    return await asyncio.to_thread(work, *args) if large else work(*args)


def _large_chat(request: ChatRequest) -> bool:
    """Whether a request's text is large enough to be worked on off the event loop."""
    chars = 0
    for message in request.messages:
        content = message.get("content")
        chars += len(content) if isinstance(content, str) else len(content_text(content))
        if chars > OFF_LOOP_CHARS:
            return True
    return False


async def answer_chat(request: ChatRequest) -> Answer:
    """Work out the answer to a chat request, after sleeping or failing as its directives ask."""
    large = _large_chat(request)
    plan = await _run(large, _plan_chat, request)
    if plan.answer is not None:
        return plan.answer
    assert plan.directives is not None
    await _side_effects(plan.directives)
    return await _run(large, _answer_chat, request, plan.prompt, plan.directives)


async def count_chat_prompt(request: ChatRequest) -> int:
    """The prompt tokens `answer_chat` reports for `request` (its directives do not act)."""
    return await _run(_large_chat(request), prompt_tokens, request.messages)


def _plan_fim(request: FimRequest) -> _Plan:
    prompt = count_tokens(request.prompt) + count_tokens(request.suffix or "") + 1
    return _Plan(prompt, directives=parse_directives(request.prompt))


def _answer_fim(request: FimRequest, prompt: int, directives: Directives) -> Answer:
    response = directives.response
    content = response if response is not None else f"echo: {directives.text}"
    return _limited(content, request.max_tokens, request.stop, 1, prompt)


async def answer_fim(request: FimRequest) -> Answer:
    """Work out the answer to a fill-in-the-middle request (directives apply; no tool calls)."""
    large = len(request.prompt) + len(request.suffix or "") > OFF_LOOP_CHARS
    plan = await _run(large, _plan_fim, request)
    assert plan.directives is not None
    await _side_effects(plan.directives)
    return await _run(large, _answer_fim, request, plan.prompt, plan.directives)


def _plan_text(request: TextRequest) -> _Plan:
    return _Plan(count_tokens(request.prompt) + 1, directives=parse_directives(request.prompt))


def _answer_text(request: TextRequest, prompt: int, directives: Directives) -> Answer:
    response = directives.response
    content = response if response is not None else f"echo: {directives.text}"
    return _limited(content, request.max_tokens, request.stop, max(request.n, 1), prompt)


async def answer_text(request: TextRequest) -> Answer:
    """Work out the answer to a raw text completion: as FIM without a suffix, `n` choices."""
    large = len(request.prompt) > OFF_LOOP_CHARS
    plan = await _run(large, _plan_text, request)
    assert plan.directives is not None
    await _side_effects(plan.directives)
    return await _run(large, _answer_text, request, plan.prompt, plan.directives)
