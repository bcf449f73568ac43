"""Business rules of conversations: start on a model or an agent, append, restart from an entry,
and reads. Model turns run in `runtime`; this module decides what is stored."""

from __future__ import annotations

from typing import Any

import orjson
from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Session

from maestrale.agents.service import AgentService
from maestrale.completions.gateway import Gateway
from maestrale.completions.hooks import Caller
from maestrale.conversations import entries as E
from maestrale.conversations import runtime
from maestrale.conversations.confirmations import refuse_confirmations
from maestrale.conversations.histories import Histories
from maestrale.conversations.repository import ConversationRepository
from maestrale.conversations.schemas import (
    ConversationAppend,
    ConversationResponse,
    ConversationRestart,
    ConversationStart,
    UsageOut,
)
from maestrale.conversations.tables import Conversation
from maestrale.conversations.turn import EMPTY, TurnPrefix
from maestrale.core.auth.principal import Tenant
from maestrale.core.clock import utcnow
from maestrale.core.errors import BadRequest, NotFound
from maestrale.core.ids import new_id
from maestrale.core.pagination import PageParams
from maestrale.engines.registry import EngineRegistry
from maestrale.guardrails.check import apply_guardrails
from maestrale.guardrails.schemas import stored


class ConversationNotFound(NotFound):
    code = "conversation_not_found"


class EntryNotFound(NotFound):
    code = "entry_not_found"


def new_conversation_id() -> str:
    return "conv_" + new_id().replace("-", "")


def describe(row: Conversation) -> dict[str, Any]:
    """The AgentConversation or ModelConversation shape (told apart by `agent_id` / `model`)."""
    common = {
        "object": "conversation",
        "id": row.id,
        "created_at": row.created_at,
        "updated_at": row.updated_at,
        "name": row.name,
        "description": row.description,
        "metadata": row.meta,
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


def guardrail_key(config: dict[str, Any]) -> str:
    return orjson.dumps(config, option=orjson.OPT_SORT_KEYS).decode()


def listing_json(kind: str, conversation_id: str, field: str, texts: list[str]) -> bytes:
    """A history body, its entries spliced in as stored (each a JSON object written by this
    server): parsing and re-encoding thousands of entries was most of the cost of a read."""
    head = orjson.dumps({"object": kind, "conversation_id": conversation_id})
    return b"".join((head[:-1], b',"', field.encode(), b'":[', ",".join(texts).encode(), b"]}"))


class ConversationService:
    # The guardrail results of this request's inputs, once checked (see `_guard`).
    guarded: list[dict[str, Any]] | None = None
    # The guardrail configurations those results come from (each is checked once a request).
    checked: frozenset[str] = frozenset()

    def __init__(
        self,
        session: AsyncSession,
        tenant: Tenant,
        engines: EngineRegistry,
        gateway: Gateway,
        caller: Caller,
        histories: Histories,
    ) -> None:
        self.session = session
        self.tenant = tenant
        self.engines = engines
        self.repo = ConversationRepository(session, tenant)
        self.agents = AgentService(session, tenant, engines)
        self.gateway = gateway
        self.caller = caller
        self.histories = histories

    # Targets.

    def in_session(self, session: AsyncSession) -> ConversationService:
        """The same caller's service on another session (a stream outlives its request's)."""
        service = ConversationService(
            session, self.tenant, self.engines, self.gateway, self.caller, self.histories
        )
        service.guarded, service.checked = self.guarded, self.checked  # checked before the stream
        return service

    async def agent_target(self, agent_id: str, version: str | int | None) -> runtime.Target:
        agent, row = await self.agents.agent_version(agent_id, version)
        return runtime.Target(
            model=row.model, instructions=row.instructions, tools=list(row.tools or []),
            completion_args=dict(row.completion_args or {}), agent_id=agent.id,
            agent_name=row.name, agent_version=row.version, handoffs=list(row.handoffs or []),
            guardrails=list(row.guardrails or []),
        )  # fmt: skip

    def _handoff_target(
        self, conversation_id: str, added: list[dict[str, Any]]
    ) -> runtime.LoadAgent:
        """What a server handoff switches to: the agent's current version, whose guardrails
        check the request's inputs too before it answers."""

        async def load(agent_id: str) -> runtime.Target:
            target = await self.agent_target(agent_id, None)
            await self._guard(conversation_id, target, added)
            return target

        return load

    async def target_of(self, row: Conversation) -> runtime.Target:
        if row.agent_id is not None:
            target = await self.agent_target(row.agent_id, row.agent_version)
            return target.with_guardrails(row.guardrails)
        assert row.model is not None
        return runtime.Target(
            model=row.model, instructions=row.instructions, tools=list(row.tools or []),
            completion_args=dict(row.completion_args or {}), guardrails=list(row.guardrails or []),
        )  # fmt: skip

    async def _run(
        self,
        conversation_id: str,
        target: runtime.Target,
        history: list[dict[str, Any]],
        added: list[dict[str, Any]],
        override: dict[str, Any] | None,
        handoff_execution: str,
        emit: runtime.Emit | None,
        prefix: TurnPrefix = EMPTY,
    ) -> runtime.RunResult:
        E.check_results(history, added)
        await self._guard(conversation_id, target, added)
        if emit is not None:
            await emit(
                {
                    "type": "conversation.response.started", "created_at": E.now_text(),
                    "conversation_id": conversation_id,
                }
            )  # fmt: skip
        return await runtime.run(
            self.gateway, self.caller, conversation_id, target, history + added,
            override=override, handoff_execution=handoff_execution,
            load_agent=self._handoff_target(conversation_id, added), emit=emit, prefix=prefix,
        )  # fmt: skip

    def _response(self, conversation_id: str, result: runtime.RunResult) -> ConversationResponse:
        return ConversationResponse(
            conversation_id=conversation_id, outputs=result.outputs,
            usage=UsageOut(**result.usage), guardrails=self.guarded or None,
        )  # fmt: skip

    async def _guard(
        self, correlation_id: str, target: runtime.Target, added: list[dict[str, Any]]
    ) -> None:
        """Check the entries a request adds against the target's guardrails (403 when one
        blocks). Each configuration is checked once a request: a streamed request is checked
        before its stream opens, and a server handoff checks the next agent's new ones."""
        fresh = [g for g in target.guardrails if guardrail_key(g) not in self.checked]
        if not fresh:
            return
        results = await apply_guardrails(
            self.gateway, self.caller, fresh, E.to_messages(None, added),
            correlation_id=correlation_id,
        )  # fmt: skip
        self.checked |= {guardrail_key(g) for g in fresh}
        self.guarded = [*(self.guarded or []), *results]

    async def _store(
        self,
        row: Conversation,
        added: list[dict[str, Any]],
        result: runtime.RunResult,
        history: list[dict[str, Any]] | None = None,
    ) -> None:
        """Write the new entries after `history` (the entries the conversation had, as read
        under its lock; none for a new conversation); once the transaction has committed,
        they are this process's copy of the history, with the turn messages the run built
        (see `histories`)."""
        changes: dict[str, Any] = {"updated_at": utcnow()}
        if row.agent_id is not None and result.target.agent_id != row.agent_id:
            target = result.target
            changes.update(agent_id=target.agent_id, agent_version=target.agent_version)
        new = added + result.outputs
        await self.repo.add_entries(row, new, **changes)
        key, entries = (self.tenant.workspace_id, row.id), (*(history or ()), *new)

        def committed(_: Session) -> None:
            self.histories.put(key, entries, result.prefix)

        event.listen(self.session.sync_session, "after_commit", committed, once=True)

    # Operations.

    async def start(
        self, body: ConversationStart, emit: runtime.Emit | None = None
    ) -> ConversationResponse:
        if (body.agent_id is None) == (body.model is None):
            raise BadRequest(
                "give exactly one of `agent_id` and `model`", code="invalid_target",
                param="agent_id",
            )  # fmt: skip
        override = body.completion_args.stored() if body.completion_args else None
        if body.agent_id is not None:
            if body.instructions is not None or body.tools is not None:
                raise BadRequest(
                    "`instructions` and `tools` belong to the agent: update the agent instead",
                    code="invalid_target", param="instructions",
                )  # fmt: skip
            target = await self.agent_target(body.agent_id, body.agent_version)
            target = target.with_guardrails(stored(body.guardrails))
        else:
            assert body.model is not None
            target = runtime.Target(
                model=body.model, instructions=body.instructions,
                tools=[t.stored() for t in body.tools or []], completion_args=override or {},
                guardrails=stored(body.guardrails) or [],
            )  # fmt: skip
            override = None
        added = E.parse_inputs(body.inputs)
        conversation_id = new_conversation_id()
        result = await self._run(
            conversation_id, target, [], added, override, body.handoff_execution or "server", emit
        )
        if body.store is not False:
            now = utcnow()
            row = Conversation(
                id=conversation_id, agent_id=target.agent_id, agent_version=target.agent_version,
                model=None if target.agent_id else target.model,
                instructions=None if target.agent_id else target.instructions,
                tools=[] if target.agent_id else target.tools,
                completion_args={} if target.agent_id else target.completion_args,
                guardrails=stored(body.guardrails), name=body.name, description=body.description,
                meta=body.metadata, created_at=now, updated_at=now,
            )  # fmt: skip
            await self.repo.add(row)
            await self._store(row, added, result)
        return self._response(conversation_id, result)

    async def get_row(self, conversation_id: str, *, lock: bool = False) -> Conversation:
        row = await (self.repo.locked if lock else self.repo.get)(conversation_id)
        if row is None:
            raise ConversationNotFound(
                f"conversation {conversation_id!r} not found", param="conversation_id"
            )
        return row

    async def append(
        self, conversation_id: str, body: ConversationAppend, emit: runtime.Emit | None = None
    ) -> ConversationResponse:
        refuse_confirmations(body.tool_confirmations)
        row = await self.get_row(conversation_id, lock=True)
        history, prefix = await self._locked_history(row)
        added = E.parse_inputs(body.inputs) if body.inputs is not None else []
        override = body.completion_args.stored() if body.completion_args else None
        result = await self._run(
            row.id, await self.target_of(row), history, added, override, body.handoff_execution,
            emit, prefix,
        )  # fmt: skip
        if body.store:
            await self._store(row, added, result, history)
        return self._response(row.id, result)

    async def _locked_history(self, row: Conversation) -> tuple[list[dict[str, Any]], TurnPrefix]:
        """The history of a conversation whose row this transaction has locked: the entries
        this process read before (see `histories`), then those added since, read now; and the
        turn messages of its first entries."""
        key = (self.tenant.workspace_id, row.id)
        known, prefix = self.histories.get(key, row.entry_count)
        if len(known) == row.entry_count:
            return list(known), prefix
        history = [*known, *await self.repo.entries(row, from_seq=len(known))]
        self.histories.put(key, tuple(history), prefix)
        return history, prefix

    async def restart(
        self, conversation_id: str, body: ConversationRestart, emit: runtime.Emit | None = None
    ) -> ConversationResponse:
        """A new conversation holding the entries up to `from_entry_id` (included), then the
        inputs, answered by the same model or agent (at `agent_version` if given)."""
        source = await self.get_row(conversation_id)
        entry = await self.repo.entry(source, body.from_entry_id)
        if entry is None:
            raise EntryNotFound(
                f"conversation {source.id!r} has no entry {body.from_entry_id!r}",
                param="from_entry_id",
            )
        target = await self._restart_target(source, body)
        history = [
            {**item, "id": f"{item['id'].split('_', 1)[0]}_{new_id().replace('-', '')}"}
            for item in await self.repo.entries(source, upto_seq=entry.seq)
        ]
        added = E.parse_inputs(body.inputs) if body.inputs is not None else []
        override = body.completion_args.stored() if body.completion_args else None
        conversation_id = new_conversation_id()
        result = await self._run(
            conversation_id, target, history, added, override, body.handoff_execution, emit
        )
        if body.store:
            now = utcnow()
            row = Conversation(
                id=conversation_id, agent_id=source.agent_id, agent_version=target.agent_version,
                model=source.model, instructions=source.instructions, tools=source.tools,
                completion_args=source.completion_args,
                guardrails=(
                    stored(body.guardrails) if body.guardrails is not None else source.guardrails
                ),
                name=source.name, description=source.description,
                meta=body.metadata if body.metadata is not None else source.meta,
                created_at=now, updated_at=now,
            )  # fmt: skip
            await self.repo.add(row)
            await self._store(row, history + added, result)
        return self._response(conversation_id, result)

    async def _restart_target(
        self, source: Conversation, body: ConversationRestart
    ) -> runtime.Target:
        """The model or agent a restart runs on, with the guardrails of the new conversation
        (the request's, else the source's) after its agent's."""
        if body.agent_version is not None and source.agent_id is None:
            raise BadRequest(
                "`agent_version` applies to agent conversations only", param="agent_version"
            )
        own = stored(body.guardrails) if body.guardrails is not None else source.guardrails
        if source.agent_id is not None:
            version = body.agent_version if body.agent_version is not None else None
            target = await self.agent_target(source.agent_id, version or source.agent_version)
            return target.with_guardrails(own)
        target = await self.target_of(source)
        target.guardrails = list(own or [])
        return target

    # Checks a streamed request passes before its stream opens (later errors are error events).
    # The guardrails are among them: their results are kept for the stream (`guarded`).

    async def check_start(self, body: ConversationStart) -> None:
        if (body.agent_id is None) == (body.model is None):
            raise BadRequest(
                "give exactly one of `agent_id` and `model`", code="invalid_target",
                param="agent_id",
            )  # fmt: skip
        if body.agent_id is not None:
            target = await self.agent_target(body.agent_id, body.agent_version)
            target = target.with_guardrails(stored(body.guardrails))
        else:
            assert body.model is not None
            await self.agents.check_model(body.model)
            target = runtime.Target(
                body.model, tools=[t.stored() for t in body.tools or []],
                guardrails=stored(body.guardrails) or [],
            )  # fmt: skip
        target.check_tools()
        # No conversation id yet: the moderation calls are correlated with none.
        await self._guard("", target, E.parse_inputs(body.inputs))

    async def check_append(self, conversation_id: str, body: ConversationAppend) -> None:
        refuse_confirmations(body.tool_confirmations)
        row = await self.get_row(conversation_id)
        if body.inputs is not None:
            added = E.parse_inputs(body.inputs)
            E.check_results(await self.repo.entries(row), added)
            await self._guard(row.id, await self.target_of(row), added)

    async def check_restart(self, conversation_id: str, body: ConversationRestart) -> None:
        source = await self.get_row(conversation_id)
        if await self.repo.entry(source, body.from_entry_id) is None:
            raise EntryNotFound(
                f"conversation {source.id!r} has no entry {body.from_entry_id!r}",
                param="from_entry_id",
            )
        target = await self._restart_target(source, body)
        if body.inputs is not None:
            await self._guard(source.id, target, E.parse_inputs(body.inputs))

    async def get(self, conversation_id: str) -> dict[str, Any]:
        return describe(await self.get_row(conversation_id))

    async def list_page(self, page: PageParams, metadata: dict[str, str]) -> list[dict[str, Any]]:
        return [describe(row) for row in await self.repo.page(page, metadata)]

    async def history_json(self, conversation_id: str) -> bytes:
        """The ConversationHistory body: every entry, in order."""
        row = await self.get_row(conversation_id)
        texts = await self.repo.entry_texts(row)
        return listing_json("conversation.history", row.id, "entries", texts)

    async def messages_json(self, conversation_id: str) -> bytes:
        """The ConversationMessages body: the message entries, in order."""
        row = await self.get_row(conversation_id)
        texts = await self.repo.entry_texts(row, E.MESSAGE_TYPES)
        return listing_json("conversation.messages", row.id, "messages", texts)

    async def delete(self, conversation_id: str) -> None:
        await self.repo.delete_conversation(await self.get_row(conversation_id))
