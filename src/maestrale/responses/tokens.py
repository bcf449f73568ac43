"""`POST /v1/responses/input_tokens`: how many tokens the request's first model turn would send
(its instructions, input, history and tools), counted by the model's own tokenizer (the engine's
`PromptCounter`): the `input_tokens` of the same request's first turn."""

from __future__ import annotations

from maestrale.completions.execute import engine_chat_request
from maestrale.conversations.loop.run import chat_params
from maestrale.conversations.loop.turn_request import check_turn
from maestrale.responses.schemas import ResponseInputs
from maestrale.responses.service import ResponsesService


async def count_input_tokens(service: ResponsesService, body: ResponseInputs) -> int:
    """Build the request's first turn as it would run (nothing stored, no guardrail run, nothing
    reserved) and count its prompt, with no transaction open."""
    prepared = await service.prepare(body, False, ready=False)
    conversations = service.conversations
    await conversations.targets.equip(prepared.target)
    turn = await check_turn(
        conversations.gateway,
        conversations.caller,
        chat_params(prepared.target, prepared.override),
        prepared.target.instructions,
        prepared.history + prepared.added,
        correlation_id=prepared.conversation_id,
        prefix=prepared.prefix,
    )
    await service.work.release()
    request = engine_chat_request(turn.call, turn.params, turn.wire)
    return await conversations.gateway.count_prompt(turn.call, request)
