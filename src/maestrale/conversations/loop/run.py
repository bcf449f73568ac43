"""The conversation loop: call the model through the gateway (each turn accounted and recorded
with the conversation id as correlation id, or the id of the workflow execution that made the
call), turn its answer into entries, run server-side handoffs and the calls of the tools the
server runs (`tool_calls`; the model reads their results in its next turn), and stop at function
calls the client must run or tool calls the user must confirm."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from maestrale.conversations.entries import (
    arguments_text,
    entry_id,
    function_call,
    handoff,
    message_output,
    now_text,
)
from maestrale.conversations.loop import tool_calls
from maestrale.conversations.loop.tool_calls import ServerCall
from maestrale.conversations.loop.turn_request import EMPTY, TurnPrefix, check_turn, prepare_turn
from maestrale.conversations.targets import HANDOFF_PREFIX, Target
from maestrale.core.errors import BadRequest
from maestrale.core.ids import new_id
from maestrale.core.uow import Release
from maestrale.engines.protocols import ChatEngine
from maestrale.engines.types import ChatRequest, Usage
from maestrale.gateway.call import Call
from maestrale.gateway.gateway import Gateway
from maestrale.gateway.hooks import Caller

MAX_STEPS = 8
# How many turns of a run a forced tool_choice ("any", "required", a function) holds for.
FORCED_TURNS = 1
COMPLETION_ARGS = (
    "stop",
    "presence_penalty",
    "frequency_penalty",
    "temperature",
    "top_p",
    "max_tokens",
    "random_seed",
    "prediction",
    "response_format",
    "tool_choice",
    "reasoning_effort",
    "parallel_tool_calls",
)


class TooManySteps(BadRequest):
    code = "too_many_steps"


@dataclass
class TurnsResult:
    outputs: list[dict[str, Any]]
    usage: dict[str, int]
    target: Target
    # The messages of the entries the last turn was sent (history, inputs, earlier outputs).
    prefix: TurnPrefix = EMPTY
    # How many of the first outputs precede the request's inputs among the conversation's
    # entries: the tool executions of the calls the request confirmed or denied.
    lead: int = 0
    # Why the last model turn stopped (its finish reason: "length" when max_tokens cut it).
    finish_reason: str = "stop"

    def entries(self, inputs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The entries the request adds to its conversation, in order."""
        return [*self.outputs[: self.lead], *inputs, *self.outputs[self.lead :]]


LoadAgent = Callable[[str], Awaitable[Target]]
Emit = Callable[[dict[str, Any]], Awaitable[None]]


def chat_params(target: Target, override: dict[str, Any] | None) -> dict[str, Any]:
    """The chat request of a turn, but its messages: the target's model, completion arguments
    (overridden by the request's) and offered tools."""
    args = {**target.completion_args, **(override or {})}
    body: dict[str, Any] = {k: v for k, v in args.items() if k in COMPLETION_ARGS}
    body["model"] = target.model
    tools = target.offered_tools()
    if tools:
        body["tools"] = tools
    return body


async def check_first_turn(
    gateway: Gateway,
    caller: Caller,
    correlation_id: str,
    target: Target,
    entries: list[dict[str, Any]],
    *,
    override: dict[str, Any] | None,
    prefix: TurnPrefix = EMPTY,
) -> TurnPrefix:
    """Check the first model turn `run_turns` will make on `entries` (unknown or unfit model,
    invalid completion arguments or messages: the 4xx it would raise), so that a request is
    refused before a stream opens; return the prefix of `entries` (which `run_turns` then only
    extends). The target's tools were checked (`Target.check_tools`) when its toolbox was built."""
    turn = await check_turn(
        gateway,
        caller,
        chat_params(target, override),
        target.instructions,
        entries,
        correlation_id=correlation_id,
        prefix=prefix,
    )
    return turn.prefix


async def run_turns(
    gateway: Gateway,
    caller: Caller,
    correlation_id: str,
    target: Target,
    history: list[dict[str, Any]],
    *,
    override: dict[str, Any] | None,
    handoff_execution: str,
    load_agent: LoadAgent,
    emit: Emit | None = None,
    prefix: TurnPrefix = EMPTY,
    source: str = "api",
    extra: Mapping[str, Any] | None = None,
    inputs: Sequence[dict[str, Any]] = (),
    confirmed: Sequence[ServerCall] = (),
    release: Release | None = None,
    max_tool_calls: int | None = None,
    stop: asyncio.Event | None = None,
) -> TurnsResult:
    """Run the `confirmed` tool calls (those the request confirmed or denied), then model turns
    on `history`, the calls' entries and `inputs` (of which `prefix` holds the first ones) until
    the model answers, calls client functions or tools that need a confirmation, or hands off
    (with `handoff_execution="client"`); a server handoff switches agent and goes on, and so does
    a turn whose tool calls the server ran (the model reads their results next). A forced
    `tool_choice` ("any", "required", a named function) holds for the first turn only, later
    turns are "auto" (as OpenAI's agents reset it), so that a forced run does not call a tool at
    every turn. A server call that repeats one of the turn before (same tool, same arguments) is
    not run again. A run that ran tools always ends with a message: when the model repeated
    itself, or past `MAX_STEPS` turns, one more turn with `tool_choice="none"` answers from the
    results so far (or, if it says nothing, a message says why the run stopped); a run that ran
    no tool past `MAX_STEPS` turns (a handoff loop) is refused. The tools run once `release`
    ended the owner's transaction (the gateway ends it before each model call). Past
    `max_tool_calls` server calls in the run, the model's further calls are not run: it answers
    from the results so far, as after a repeated call. Once `stop` is set, a streamed turn ends
    where it is (its text so far is its message, its calls dropped) and the run ends with it."""
    outputs: list[dict[str, Any]] = []
    usage = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
    if confirmed:
        await _before_tools(gateway, release)
        outputs += await tool_calls.execute(target.toolbox, confirmed, emit, 0)
    lead = len(outputs)
    # The citations and files of the tools run since the model last answered: its next answer
    # carries them.
    cited = tool_calls.chunks_of(outputs)
    before = [*history, *outputs, *inputs]
    ran_tools = lead > 0
    calls_run = lead  # the server calls run so far (for `max_tool_calls`)
    # The server calls of the turn before, as (name, arguments): a turn repeating them is cut.
    previous: set[tuple[str, str]] = set()
    closing: str | None = None  # why the next turn is the last, made without tools
    for step in range(MAX_STEPS + 1):
        if step == MAX_STEPS:
            if not ran_tools:
                break
            closing = closing or f"the run reached its limit of {MAX_STEPS} model turns"
        params = chat_params(target, override)
        if step >= FORCED_TURNS and params.get("tool_choice") not in (None, "auto", "none"):
            params["tool_choice"] = "auto"
        if closing is not None:
            params["tool_choice"] = "none"
        call, request, prefix = await prepare_turn(
            gateway,
            caller,
            params,
            target.instructions,
            before + outputs[lead:],
            correlation_id=correlation_id,
            prefix=prefix,
            source=source,
            # Which prompt and skill versions the instructions were made of, for the event.
            extra={**(extra or {}), **target.record} if target.record else extra,
        )
        message_id = entry_id("message.output")
        if emit is None:
            result = await gateway.chat(call, request)
            message, turn_usage = result.choices[0].message, result.usage
            finish = result.choices[0].finish_reason
        else:
            message, turn_usage, finish = await streamed_turn(
                gateway, call, request, emit, message_id, len(outputs), target, stop
            )
        for key, value in turn_usage.as_dict().items():
            usage[key] += value
        content = message.get("content")
        if closing is not None:
            return await _closed(
                TurnsResult(outputs, usage, target, prefix, lead, finish),
                content if isinstance(content, str) else "",
                closing,
                message_id,
                cited,
                emit,
            )
        calls = [c for c in message.get("tool_calls") or [] if isinstance(c, dict)]
        handoffs = [c for c in calls if _handoff_target(c, target) is not None]
        functions = [c for c in calls if _handoff_target(c, target) is None]
        answered = isinstance(content, str) and bool(content or not calls)
        if isinstance(content, str) and answered:
            answer = message_output(content, target.agent_id, target.model, message_id)
            if cited:
                answer["content"] = [{"type": "text", "text": content}, *cited]
                if emit is not None:
                    await emit_chunks(emit, answer, cited, len(outputs))
                cited = []
            outputs.append(answer)
        runs, waiting = _sort_calls(functions, target)
        repeats = [r for r in runs if (r.name, _canonical(r.arguments)) in previous]
        runs = [r for r in runs if r not in repeats]
        capped: list[ServerCall] = []
        if max_tool_calls is not None:
            left = max(0, max_tool_calls - calls_run)
            runs, capped = runs[:left], runs[left:]
            calls_run += len(runs)
        previous = {(r.name, _canonical(r.arguments)) for r in runs}
        if runs:
            await _before_tools(gateway, release)
            ran = await tool_calls.execute(target.toolbox, runs, emit, len(outputs))
            outputs += ran
            cited += tool_calls.chunks_of(ran)
            ran_tools = True
        for item in waiting:
            outputs.append(item)
            if emit is not None:
                await emit(function_call_event(item, len(outputs) - 1))
        if (repeats or capped) and not (answered or waiting or handoffs or runs):
            names = ", ".join(sorted({r.name for r in repeats}))
            closing = (
                f"the run reached its limit of {max_tool_calls} tool calls"
                if capped
                else f"the model repeated its call to {names} with the same arguments"
            )
            continue
        if waiting or not (handoffs or runs):
            return TurnsResult(outputs, usage, target, prefix, lead, finish)
        if not handoffs:
            continue  # the model reads the results of the tools the server ran
        next_id = _handoff_target(handoffs[0], target)
        assert next_id is not None
        nxt = await load_agent(next_id)
        outputs.append(
            handoff((target.agent_id or "", target.agent_name), (next_id, nxt.agent_name))
        )
        if emit is not None:
            for event in handoff_events(outputs[-1], len(outputs) - 1):
                await emit(event)
        target = nxt
        if handoff_execution == "client":
            return TurnsResult(outputs, usage, target, prefix, lead, finish)
    raise TooManySteps(
        f"the conversation took more than {MAX_STEPS} model turns in one request (a handoff loop?)"
    )


async def _closed(
    result: TurnsResult,
    text: str,
    reason: str,
    message_id: str,
    cited: list[dict[str, Any]],
    emit: Emit | None,
) -> TurnsResult:
    """End a run with the text of its last turn (made without tools), or, when that turn said
    nothing, a message saying why the run stopped; calls the turn made anyway are not run."""
    answer = message_output(
        text or f"The run stopped: {reason}.",
        result.target.agent_id,
        result.target.model,
        message_id,
    )
    index = len(result.outputs)
    if emit is not None and not text:  # streamed text was emitted as it came
        await emit(
            {
                "type": "message.output.delta",
                "created_at": now_text(),
                "output_index": index,
                "id": message_id,
                "content_index": 0,
                "content": answer["content"],
                "model": answer["model"],
                "agent_id": answer["agent_id"],
                "role": "assistant",
            }
        )
    if cited:
        answer["content"] = [{"type": "text", "text": answer["content"]}, *cited]
        if emit is not None:
            await emit_chunks(emit, answer, cited, index)
    result.outputs.append(answer)
    return result


def _canonical(arguments: str) -> str:
    """A call's arguments in one spelling (key order and spacing aside), to compare calls."""
    parsed = tool_calls.parse_arguments(arguments)
    if parsed is None:
        return arguments.strip()
    return orjson.dumps(parsed, option=orjson.OPT_SORT_KEYS).decode()


def _sort_calls(
    calls: list[dict[str, Any]], target: Target
) -> tuple[list[ServerCall], list[dict[str, Any]]]:
    """A turn's (non-handoff) tool calls: those the server runs now, and the function.call
    entries of the others, in call order: client function calls, and calls of server tools that
    wait for the user's confirmation."""
    tools = {tool.name: tool for tool in target.toolbox.tools()}
    runs: list[ServerCall] = []
    waiting: list[dict[str, Any]] = []
    for c in calls:
        fn = c.get("function") or {}
        name = str(fn.get("name") or "")
        arguments = fn.get("arguments", "{}")
        arguments = arguments if isinstance(arguments, str) else arguments_text(arguments)
        tool = tools.get(name)
        call_id = str(c.get("id") or "")
        if tool is None:
            waiting.append(function_call(call_id, name, arguments, target.agent_id, target.model))
            continue
        # A server call is named by its id (in its entries, and by a confirmation).
        call_id = call_id or "call_" + new_id().replace("-", "")
        if tool.requires_confirmation:
            waiting.append(
                function_call(call_id, name, arguments, target.agent_id, target.model, "pending")
            )
        else:
            runs.append(ServerCall(call_id, name, arguments, tool, target.agent_id, target.model))
    return runs, waiting


def _handoff_target(call: dict[str, Any], target: Target) -> str | None:
    name = (call.get("function") or {}).get("name")
    if isinstance(name, str) and name.startswith(HANDOFF_PREFIX):
        agent_id = name.removeprefix(HANDOFF_PREFIX)
        if agent_id in target.handoffs:
            return agent_id
    return None


async def _before_tools(gateway: Gateway, release: Release | None) -> None:
    """No connection is held while a tool server answers: the owner's transaction ends."""
    if release is not None:
        await release()
    gateway.db.check_released("a tool call")


async def streamed_turn(
    gateway: Gateway,
    call: Call[ChatEngine],
    request: ChatRequest,
    emit: Emit,
    message_id: str,
    output_index: int,
    target: Target,
    stop: asyncio.Event | None = None,
) -> tuple[dict[str, Any], Usage, str]:
    """One model turn streamed from the engine: text deltas are emitted as they come; tool
    calls are gathered (by index) and returned with the text, the usage and the finish
    reason. Once `stop` is set the stream is closed (the call accounted as abandoned) and the
    turn is its text so far, without calls."""
    first, rest = await gateway.stream_chat(call, request)
    text: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    usage = Usage()
    finish = "stop"

    async def chunks() -> Any:
        yield first
        async for chunk in rest:
            yield chunk

    stream = chunks()
    async for chunk in stream:
        if stop is not None and stop.is_set():
            await stream.aclose()
            await rest.aclose()
            calls.clear()
            break
        if chunk.usage is not None:
            usage = chunk.usage
        if chunk.finish_reason:
            finish = chunk.finish_reason
        piece = chunk.delta.get("content")
        if isinstance(piece, str) and piece:
            text.append(piece)
            await emit(
                {
                    "type": "message.output.delta",
                    "created_at": now_text(),
                    "output_index": output_index,
                    "id": message_id,
                    "content_index": 0,
                    "content": piece,
                    "model": target.model,
                    "agent_id": target.agent_id,
                    "role": "assistant",
                }
            )
        for position, delta in enumerate(chunk.delta.get("tool_calls") or []):
            if not isinstance(delta, dict):
                continue
            index = delta.get("index", position)
            slot = calls.setdefault(
                index if isinstance(index, int) else position,
                {"id": "", "type": "function", "function": {"name": "", "arguments": ""}},
            )
            if delta.get("id"):
                slot["id"] = delta["id"]
            fn = delta.get("function") or {}
            if fn.get("name"):
                slot["function"]["name"] = fn["name"]
            arguments = fn.get("arguments")
            if isinstance(arguments, dict):
                slot["function"]["arguments"] = arguments_text(arguments)
            elif isinstance(arguments, str):
                slot["function"]["arguments"] += arguments
    message = {
        "role": "assistant",
        "content": "".join(text),
        "tool_calls": [calls[i] for i in sorted(calls)] or None,
    }
    return message, usage, finish


async def emit_chunks(
    emit: Emit, answer: dict[str, Any], chunks: list[dict[str, Any]], output_index: int
) -> None:
    """Stream the chunks an answer carries after its text (citations, files), one delta each."""
    for position, chunk in enumerate(chunks, start=1):
        await emit(
            {
                "type": "message.output.delta",
                "created_at": now_text(),
                "output_index": output_index,
                "id": answer["id"],
                "content_index": position,
                "content": chunk,
                "model": answer["model"],
                "agent_id": answer["agent_id"],
                "role": "assistant",
            }
        )


def function_call_event(item: dict[str, Any], output_index: int) -> dict[str, Any]:
    return {
        "type": "function.call.delta",
        "created_at": item["created_at"],
        "output_index": output_index,
        "id": item["id"],
        "name": item["name"],
        "tool_call_id": item["tool_call_id"],
        "arguments": item["arguments"],
        "model": item["model"],
        "agent_id": item["agent_id"],
        "confirmation_status": item.get("confirmation_status"),
    }


def handoff_events(item: dict[str, Any], output_index: int) -> list[dict[str, Any]]:
    common = {"created_at": item["created_at"], "output_index": output_index, "id": item["id"]}
    return [
        {
            "type": "agent.handoff.started",
            **common,
            "previous_agent_id": item["previous_agent_id"],
            "previous_agent_name": item["previous_agent_name"],
        },
        {
            "type": "agent.handoff.done",
            **common,
            "next_agent_id": item["next_agent_id"],
            "next_agent_name": item["next_agent_name"],
        },
    ]
