"""The jobs of the llama.cpp engine: a chat, text or FIM request made ready for the worker thread
(its prompt tokens and how to sample it), and the sampling of each choice (`Sampling`), with the
engine's defaults where the request sets nothing."""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from llama_cpp.llama_grammar import LlamaGrammar

from maestrale.engines.local.llama_generate import Sampling, grammar_for
from maestrale.engines.local.llama_model import LlamaOptions, LoadedModel
from maestrale.engines.local.llama_template import ChatPrompt
from maestrale.engines.local.llama_tools import ToolPlan
from maestrale.engines.types import ChatRequest, FimRequest, TextRequest

DEFAULT_TEMPERATURE = 0.7
_SEEDS = 2**32 - 1  # llama.cpp reads 0xFFFFFFFF as "pick a random seed"


@dataclass(slots=True)
class Job:
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
    tools: ToolPlan | None = None
    variant: Path | None = None  # a fine-tuned model's GGUF, else the base
    top_k: int | None = None
    repetition_penalty: float | None = None
    min_tokens: int | None = None
    logprobs: int | None = None  # alternatives per token; None: no log-probabilities


def _sampled(request: ChatRequest | TextRequest) -> dict[str, Any]:
    """The sampling fields chat and text requests share, as a job's."""
    return {
        "n": max(request.n, 1),
        "max_tokens": request.max_tokens,
        "temperature": request.temperature,
        "top_p": request.top_p,
        "seed": request.random_seed,
        "stop": list(request.stop),
        "presence_penalty": request.presence_penalty,
        "frequency_penalty": request.frequency_penalty,
    }


def budget(request: ChatRequest, room: int, default_max_tokens: int) -> int:
    """The most tokens the answer to `request` may have, `room` being what is left of the
    context: what bounds its grammar."""
    wanted = request.max_tokens
    if wanted is None:
        wanted = default_max_tokens
    return max(1, min(wanted, room))


def chat_job(
    model: LoadedModel,
    variant: Path | None,
    request: ChatRequest,
    chat: ChatPrompt,
    default_max_tokens: int,
) -> Job:
    """A chat on its prompt (`llama_template`), its output constrained by its format."""
    room = model.n_ctx - len(chat.tokens)
    return Job(
        prompt=chat.tokens,
        **_sampled(request),
        grammar=grammar_for(
            model.vocab, request.response_format, budget(request, room, default_max_tokens)
        ),
        tools=chat.tools,
        variant=variant,
        top_k=request.top_k,
        repetition_penalty=request.repetition_penalty,
        min_tokens=request.min_tokens,
        logprobs=request.logprobs,
    )


def text_job(model: LoadedModel, variant: Path | None, request: TextRequest) -> Job:
    """A raw text completion: as FIM without FIM tokens, the model's BOS (when it wants one),
    then the prompt."""
    llm = model.llm
    prompt = llm.tokenize(request.prompt.encode("utf-8"), add_bos=True)
    return Job(
        prompt=prompt or [llm.token_bos()],
        **_sampled(request),
        variant=variant,
        logprobs=request.logprobs,
    )


def fim_job(model: LoadedModel, variant: Path | None, request: FimRequest) -> Job:
    """A FIM completion laid out prefix/suffix/middle when the vocabulary has FIM tokens, else
    the prompt continued."""
    # `add_bos=True` adds BOS only when the model asks for it, so this is the model's prefix.
    llm, vocab = model.llm, model.vocab
    start = llm.tokenize(b"", add_bos=True)
    prefix = llm.tokenize(request.prompt.encode("utf-8"), add_bos=False)
    if vocab.has_fim:
        suffix = llm.tokenize((request.suffix or "").encode("utf-8"), add_bos=False)
        prompt = [*start, vocab.fim_prefix, *prefix, vocab.fim_suffix, *suffix, vocab.fim_middle]
    else:
        prompt = [*start, *prefix] or [llm.token_bos()]
    return Job(
        prompt=prompt,
        n=1,
        max_tokens=request.max_tokens,
        temperature=request.temperature,
        top_p=request.top_p,
        seed=request.random_seed,
        stop=list(request.stop),
        variant=variant,
    )


def sampling(
    job: Job,
    choice: int,
    room: int,
    options: LlamaOptions,
    ends: npt.NDArray[np.intp] | None,
) -> Sampling:
    """How choice `choice` of `job` is sampled, `room` tokens being left in the context; `ends`
    the end-of-generation tokens held back until `min_tokens`."""
    seed = job.seed if job.seed is not None else options.seed
    reproducible = seed is not None or job.temperature == 0
    if seed is None:
        seed = secrets.randbelow(_SEEDS)
    max_tokens = job.max_tokens if job.max_tokens is not None else options.default_max_tokens
    # JSON repeats its punctuation by nature: penalising repeats there breaks the structure
    # the grammar asks for, so only free text gets the default penalty.
    repeat_penalty = (
        job.repetition_penalty
        if job.repetition_penalty is not None
        else 1.0
        if job.grammar is not None
        else options.repeat_penalty
    )
    return Sampling(
        max_tokens=min(max_tokens, room),
        temperature=job.temperature if job.temperature is not None else DEFAULT_TEMPERATURE,
        top_p=job.top_p if job.top_p is not None else 1.0,
        seed=(seed + choice) % _SEEDS,
        stop=job.stop,
        presence_penalty=job.presence_penalty or 0.0,
        frequency_penalty=job.frequency_penalty or 0.0,
        repeat_penalty=repeat_penalty,
        grammar=job.grammar,
        fresh=reproducible,
        top_k=job.top_k if job.top_k is not None else 40,
        min_tokens=job.min_tokens or 0,
        ends=ends,
        logprobs=job.logprobs,
    )
