"""Business rules of conversations: read them; start one on a model or an agent, append to one,
restart one from an entry. A request that runs the model is prepared (checked: `Prepared`), then
executed: its model turns run in the loop (`loop.run`) with no transaction open, and this module
decides what is stored."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from maestrale.conversations.entries import (
    MESSAGE_TYPES,
    check_results,
    now_text,
    parse_inputs,
    to_messages,
)
from maestrale.conversations.histories import Histories
from maestrale.conversations.loop import confirmations
from maestrale.conversations.loop.run import Emit, TurnsResult, check_first_turn, run_turns
from maestrale.conversations.loop.turn_request import TurnPrefix
from maestrale.conversations.prepared import (
    Prepared,
    copied,
    guardrail_key,
    new_conversation_id,
)
from maestrale.conversations.repository import ConversationRepository, TurnRow
from maestrale.conversations.schemas import (
    ConversationAppend,
    ConversationResponse,
    ConversationRestart,
    ConversationStart,
    UsageOut,
    describe,
    listing_json,
)
from maestrale.conversations.server_tools import ToolboxFactory
from maestrale.conversations.tables import Conversation
from maestrale.conversations.targets import Target, Targets
from maestrale.conversations.turn_lease import (
    ConversationChanged,
    ConversationNotFound,
    TurnLease,
    TurnLeases,
)
from maestrale.core.auth.principal import Tenant
from maestrale.core.clock import utcnow
from maestrale.core.errors import NotFound
from maestrale.core.pagination import PageParams
from maestrale.core.uow import UnitOfWork
from maestrale.engines.registry import EngineRegistry
from maestrale.gateway.gateway import Gateway
from maestrale.gateway.hooks import Caller
from maestrale.guardrails.check import apply_guardrails
from maestrale.guardrails.schemas import stored


class EntryNotFound(NotFound):
    code = "entry_not_found"


class ConversationService:
    """The conversations of one caller in one unit of work: their reads, and the requests that
    run the model (`prepare_*`, then `execute`)."""

    def __init__(
        self,
        work: UnitOfWork,
        tenant: Tenant,
        engines: EngineRegistry,
        gateway: Gateway,
        caller: Caller,
        histories: Histories,
        leases: TurnLeases,
        *,
        source: str = "api",
        extra: Mapping[str, Any] | None = None,
        correlation_id: str | None = None,
        toolboxes: ToolboxFactory | None = None,
    ) -> None:
        self.work = work
        self.tenant = tenant
        self.engines = engines
        self.repo = ConversationRepository(work.session, tenant)
        self.targets = Targets(work, tenant, engines, toolboxes)
        # Ends this unit of work's transaction before each model call (a stream's or a batch
        # line's is not the request's).
        self.gateway = gateway.releasing(work.release)
        self.caller = caller
        self.histories = histories
        self.leases = leases
        # Where the model calls come from, for accounting (a batch line: "batch", with its ids
        # among the events' extra fields).
        self.source = source
        self.extra = extra
        # The correlation id of the model calls when not the conversation's own (a workflow
        # execution's, for the calls of a workflow's activities).
        self.correlation_id = correlation_id
        # Kept for `in_work` (`Targets` builds the toolboxes).
        self.toolboxes = toolboxes

    def in_work(self, work: UnitOfWork) -> ConversationService:
        """The same caller's service in another unit of work (a stream outlives its request)."""
        return ConversationService(
            work,
            self.tenant,
            self.engines,
            self.gateway,
            self.caller,
            self.histories,
            self.leases,
            source=self.source,
            extra=self.extra,
            correlation_id=self.correlation_id,
            toolboxes=self.toolboxes,
        )

    def _correlation(self, prepared: Prepared) -> str:
        return self.correlation_id or prepared.conversation_id

    # Reads.

    async def get_row(self, conversation_id: str) -> Conversation:
        row = await self.repo.get(conversation_id)
        if row is None:
            raise ConversationNotFound(
                f"conversation {conversation_id!r} not found", param="conversation_id"
            )
        return row

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
        texts = await self.repo.entry_texts(row, MESSAGE_TYPES)
        return listing_json("conversation.messages", row.id, "messages", texts)

    async def delete(self, conversation_id: str) -> None:
        row = await self.get_row(conversation_id)
        await self.repo.delete_conversation(row)
        # Its copy would otherwise hold memory until it ages out of the cache (a deletion that
        # rolls back only costs the next append one read of the whole history).
        self.histories.drop((self.tenant.workspace_id, row.id))

    # Checks.

    async def _guard(self, prepared: Prepared, target: Target, added: list[dict[str, Any]]) -> None:
        """Check the entries a request adds against the target's guardrails (403 when one
        blocks), with no transaction open (the gateway releases it). Each configuration is
        checked once a request: when the request is prepared, and for a server handoff the next
        agent's new ones."""
        fresh = [g for g in target.guardrails if guardrail_key(g) not in prepared.checked]
        if not fresh:
            return
        results = await apply_guardrails(
            self.gateway,
            self.caller,
            fresh,
            to_messages(None, added),
            correlation_id=self._correlation(prepared),
            source=self.source,
        )
        prepared.checked.update(guardrail_key(g) for g in fresh)
        prepared.guarded = [*(prepared.guarded or []), *results]

    async def _ready(self, prepared: Prepared) -> Prepared:
        """Check the request's inputs against its history, its tools (and build their toolbox),
        its answers to the tool calls awaiting confirmation, its first model turn (model,
        completion arguments, messages), then its guardrails; the reads are over (nothing stays
        open while the request waits for its turn or its model)."""
        check_results(prepared.history, prepared.added)
        await self.targets.equip(prepared.target)
        prepared.confirmed = confirmations.resolve(
            prepared.history, prepared.confirmations, prepared.target.toolbox
        )
        prefix = await check_first_turn(
            self.gateway,
            self.caller,
            self._correlation(prepared),
            prepared.target,
            prepared.history + prepared.added,
            override=prepared.override,
            prefix=prepared.prefix,
        )
        if not prepared.confirmed:
            # With confirmations, the calls' entries come between the history and the inputs:
            # the run extends the history's prefix instead.
            prepared.prefix = prefix
        await self._guard(prepared, prepared.target, prepared.added)
        await self.work.release()  # nothing stays open while the request waits for its turn
        return prepared

    async def _history(
        self, row: Conversation | TurnRow
    ) -> tuple[list[dict[str, Any]], TurnPrefix]:
        """The committed entries of a conversation (its `entry_count` first ones): those this
        process read before (see `histories`), then those added since, read now; and the turn
        messages of its first entries."""
        key = (self.tenant.workspace_id, row.id)
        known, prefix = self.histories.get(key, row.entry_count)
        if len(known) == row.entry_count:
            return list(known), prefix
        history = [*known, *await self.repo.entries(row, from_seq=len(known))]
        self.histories.put(key, tuple(history), prefix)
        return history, prefix

    # Preparing requests.

    async def prepare_start(
        self,
        body: ConversationStart,
        added: list[dict[str, Any]] | None = None,
        override: dict[str, Any] | None = None,
        *,
        ready: bool = True,
    ) -> Prepared:
        """A conversation on a model or an agent. A model conversation keeps the request's
        completion arguments as its own; an agent conversation's override its agent's for this
        request only. `added` are the request's entries when given already parsed (instead of
        `body.inputs`), `override` completion arguments of this request only; with `ready`
        false, the request is built but not checked (`_ready`: its model, tools, guardrails).
        """
        target = await self.targets.of_start(body)
        if body.agent_id is not None and body.completion_args:
            override = {**body.completion_args.stored(), **(override or {})}
        conversation_id = new_conversation_id()
        create = None
        if body.store is not False:
            now = utcnow()
            agent = target.agent_id is not None
            create = Conversation(
                id=conversation_id,
                agent_id=target.agent_id,
                agent_version=target.agent_version,
                model=None if agent else target.model,
                # The caller's own: the prompt and skills come from `registry_refs` at each run.
                instructions=None if agent else body.instructions,
                tools=[] if agent else target.tools,
                completion_args={} if agent else target.completion_args,
                registry_refs=target.refs,
                guardrails=stored(body.guardrails),
                name=body.name,
                description=body.description,
                meta=body.metadata,
                created_at=now,
                updated_at=now,
            )
        prepared = Prepared(
            conversation_id,
            target,
            [],
            parse_inputs(body.inputs) if added is None else added,
            override,
            body.handoff_execution or "server",
            create=create,
        )
        return await self._ready(prepared) if ready else prepared

    async def prepare_follow(
        self,
        conversation_id: str,
        upto: int,
        body: ConversationStart,
        added: list[dict[str, Any]],
        override: dict[str, Any] | None,
        *,
        ready: bool = True,
    ) -> Prepared:
        """A request on the first `upto` entries of a stored conversation, answered by the
        target of `body` (not the conversation's: a response names its model, tools and
        instructions anew). At the conversation's tip it appends to it (when `body.store`, on
        exactly those entries); before it, it starts a new conversation holding a copy of them
        (a branch), stored when `body.store`."""
        row = await self.get_row(conversation_id)
        prepared = await self.prepare_start(body, added, override, ready=False)
        if row.entry_count == upto:
            prepared.history, prepared.prefix = await self._history(row)
            prepared.conversation_id, prepared.create = row.id, None
            prepared.append, prepared.exact = body.store is not False, True
        else:
            prepared.history = copied(await self.repo.entries(row, upto_seq=upto - 1))
        return await self._ready(prepared) if ready else prepared

    async def prepare_append(self, conversation_id: str, body: ConversationAppend) -> Prepared:
        """Inputs, and the answers to the tool calls awaiting confirmation (`tool_confirmations`:
        each must be answered when any is pending; then inputs may be empty)."""
        row = await self.get_row(conversation_id)
        history, prefix = await self._history(row)
        answers = list(body.tool_confirmations or [])
        inputs = body.inputs
        prepared = Prepared(
            row.id,
            await self.targets.of_conversation(row),
            history,
            [] if inputs is None or (answers and inputs == []) else parse_inputs(inputs),
            body.completion_args.stored() if body.completion_args else None,
            body.handoff_execution,
            prefix=prefix,
            append=body.store,
            confirmations=answers,
        )
        return await self._ready(prepared)

    async def prepare_restart(self, conversation_id: str, body: ConversationRestart) -> Prepared:
        """A new conversation holding the entries up to `from_entry_id` (included), then the
        inputs, answered by the same model or agent (at `agent_version` if given)."""
        source = await self.get_row(conversation_id)
        entry = await self.repo.entry(source, body.from_entry_id)
        if entry is None:
            raise EntryNotFound(
                f"conversation {source.id!r} has no entry {body.from_entry_id!r}",
                param="from_entry_id",
            )
        target = await self.targets.of_restart(source, body)
        history = copied(await self.repo.entries(source, upto_seq=entry.seq))
        confirmations.refuse_pending(history, body.from_entry_id)
        conversation_id = new_conversation_id()
        create = None
        if body.store:
            now = utcnow()
            create = Conversation(
                id=conversation_id,
                agent_id=source.agent_id,
                agent_version=target.agent_version,
                model=source.model,
                instructions=source.instructions,
                tools=source.tools,
                completion_args=source.completion_args,
                registry_refs=source.registry_refs,
                guardrails=(
                    stored(body.guardrails) if body.guardrails is not None else source.guardrails
                ),
                name=source.name,
                description=source.description,
                meta=body.metadata if body.metadata is not None else source.meta,
                created_at=now,
                updated_at=now,
            )
        prepared = Prepared(
            conversation_id,
            target,
            history,
            parse_inputs(body.inputs) if body.inputs is not None else [],
            body.completion_args.stored() if body.completion_args else None,
            body.handoff_execution,
            create=create,
        )
        return await self._ready(prepared)

    # Running them.

    async def execute(self, prepared: Prepared, emit: Emit | None = None) -> ConversationResponse:
        """Run a prepared request (`complete`) and answer its conversation response."""
        return self._response(prepared, await self.complete(prepared, emit))

    async def complete(self, prepared: Prepared, emit: Emit | None = None) -> TurnsResult:
        """Run a prepared request's model turns with no transaction open, then store what it
        adds in one short transaction. An append that stores holds its conversation's turn
        meanwhile (`turn_lease`), so that two appends to one conversation never interleave."""
        if not prepared.append:
            result = await self._run(prepared, prepared.history, prepared.prefix, emit)
            if prepared.create is not None:
                await self._store(prepared, prepared.create, 0, prepared.history, result)
            return result
        async with self.leases.hold(prepared.conversation_id) as lease:
            history, prefix = prepared.history, prepared.prefix
            if lease.row.entry_count != len(history):  # another append came in between
                if prepared.exact:
                    raise ConversationChanged(
                        f"conversation {prepared.conversation_id!r} changed before this request "
                        "ran: another turn was added after the one it continues; retry",
                        param="previous_response_id",
                    )
                history, prefix = await self._history(lease.row)
                check_results(history, prepared.added)
                prepared.confirmed = confirmations.resolve(
                    history, prepared.confirmations, prepared.target.toolbox
                )
            result = await self._run(prepared, history, prefix, emit)
            try:
                await self._store(prepared, lease.row, len(history), history, result, lease)
                # Ended here, not by the caller: the same commit gives the turn back.
                await self.work.release()
            except BaseException:
                # Ended before the turn is given back in another session, which would wait for
                # this transaction's write lock on SQLite (until its busy timeout).
                await self.work.rollback()
                raise
        return result

    async def _run(
        self,
        prepared: Prepared,
        history: list[dict[str, Any]],
        prefix: TurnPrefix,
        emit: Emit | None,
    ) -> TurnsResult:
        if emit is not None:
            await emit(
                {
                    "type": "conversation.response.started",
                    "created_at": now_text(),
                    "conversation_id": prepared.conversation_id,
                }
            )

        async def load_agent(agent_id: str) -> Target:
            """A server handoff's next agent (its current version) with its tools, whose
            guardrails check the request's inputs too before it answers."""
            target = await self.targets.of_agent(agent_id, None, prepared.target.variables)
            await self.targets.equip(target)
            await self._guard(prepared, target, prepared.added)
            return target

        result = await run_turns(
            self.gateway,
            self.caller,
            self._correlation(prepared),
            prepared.target,
            history,
            override=prepared.override,
            handoff_execution=prepared.handoff_execution,
            load_agent=load_agent,
            emit=emit,
            prefix=prefix,
            source=self.source,
            extra=self.extra,
            inputs=prepared.added,
            confirmed=prepared.confirmed,
            release=self.work.release,
            max_tool_calls=prepared.max_tool_calls,
            stop=prepared.stop,
        )
        prepared.finish_reason = result.finish_reason
        return result

    async def _store(
        self,
        prepared: Prepared,
        row: Conversation | TurnRow,
        first: int,
        history: list[dict[str, Any]],
        result: TurnsResult,
        lease: TurnLease | None = None,
    ) -> None:
        """Write the entries of `history` from `first` on (a restart's copy), the request's and
        the model's, after the `first` ones of conversation `row` (with `lease`, only while it
        holds), and the confirmation status of the calls it answered; once committed, they are
        this process's copy of the history, with the turn messages the run built (see
        `histories`). A server handoff leaves the conversation on the agent it handed to."""
        conversation_id = row.id
        prepared.first_seq = len(history) + result.lead
        changes: dict[str, Any] = {"updated_at": utcnow()}
        if row.agent_id is not None and result.target.agent_id != row.agent_id:
            target = result.target
            changes.update(agent_id=target.agent_id, agent_version=target.agent_version)
        new = [*history[first:], *result.entries(prepared.added)]
        owner = lease.owner if lease is not None else None
        if row is prepared.create:
            await self.repo.create(prepared.create, new, **changes)
        elif not await self.repo.add_entries(conversation_id, first, new, owner=owner, **changes):
            raise ConversationChanged(
                f"conversation {conversation_id!r} changed while it answered: nothing was "
                "stored; retry",
                param="conversation_id",
            )
        if prepared.on_store is not None:
            await prepared.on_store(result)
        answered = confirmations.answered(history[:first], prepared.confirmed)
        if answered:
            await self.repo.rewrite_entries(conversation_id, list(answered.values()))
            history = [answered.get(position, item) for position, item in enumerate(history)]
        key, entries = (self.tenant.workspace_id, conversation_id), (*history[:first], *new)

        def committed() -> None:
            self.histories.put(key, entries, result.prefix)
            if lease is not None:
                lease.given_back = True

        self.work.on_commit(committed)

    def _response(self, prepared: Prepared, result: TurnsResult) -> ConversationResponse:
        return ConversationResponse(
            conversation_id=prepared.conversation_id,
            outputs=result.outputs,
            usage=UsageOut(**result.usage),
            guardrails=prepared.guarded or None,
        )
