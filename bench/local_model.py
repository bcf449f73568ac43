"""Speed of the local chat engine (SmolLM2-135M on llama.cpp) beside llama-cpp-python's own.

The engine comes from the built-in catalog through `EngineRegistry`, as the server loads it, so
its figures include all of its overhead (worker thread, hand-off to the event loop, stop strings).
Beside it, a plain `llama_cpp.Llama` on the same GGUF file with the same n_ctx, n_threads and
n_batch runs the library's own fast path, `Llama.create_completion` (plain, and `stream=True`),
on the same prompt tokens (the model's chat template), with the same sampling (temperature 0,
the engine's repeat penalty). Both ask for the same number of output tokens and the bench checks
that both produced that many, and the same text.

The runs are interleaved (engine plain, library plain, engine streamed, library streamed, then
the reverse order in the next round), so that noise from the rest of the machine hits both alike.
For each thread count it prints the medians of tokens per second (output tokens over the whole
call, prompt evaluation included), of the decode speed after the first token (streamed) and of the
per-round ratio engine / library (with its range: a wide one means a noisy machine).

    .venv/bin/python -m bench.local_model [--runs 7] [--tokens 64] [--threads 1 2]
                                          [--model smollm2-135m-instruct]

`--threads` takes one or more thread counts, each overriding the catalog entry's `n_threads`.
The figures are for reading: nothing asserts on them.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, cast

import llama_cpp

from maestrale.engines.local.llama_cpp import LlamaCppEngine
from maestrale.engines.local.llama_model import chat_formatter, parse_options
from maestrale.engines.local.llama_tools import template_messages
from maestrale.engines.registry import EngineRegistry
from maestrale.engines.specs import ModelSpec, load_catalog
from maestrale.engines.types import ChatRequest

PROMPT = "Write a long story about a dragon who learns to sing."


@dataclass(slots=True, frozen=True)
class Sample:
    """One timed generation."""

    seconds: float
    first: float  # time to the first piece of text (the whole call when not streamed)
    tokens: int
    text: str

    @property
    def speed(self) -> float:
        return self.tokens / self.seconds

    @property
    def decode(self) -> float:
        """Tokens per second after the first one (prompt evaluation excluded)."""
        return (self.tokens - 1) / max(self.seconds - self.first, 1e-9)


# --- the engine, as the server runs it ----------------------------------------------------------


async def engine_plain(engine: LlamaCppEngine, request: ChatRequest) -> Sample:
    start = time.perf_counter()
    result = await engine.chat(request)
    seconds = time.perf_counter() - start
    text = str(result.choices[0].message.get("content") or "")
    return Sample(seconds, seconds, result.usage.completion_tokens, text)


async def engine_streamed(engine: LlamaCppEngine, request: ChatRequest) -> Sample:
    start = time.perf_counter()
    first: float | None = None
    tokens = 0
    parts: list[str] = []
    async for chunk in engine.chat_stream(request):
        piece = chunk.delta.get("content")
        if piece:
            parts.append(piece)
            if first is None:
                first = time.perf_counter() - start
        if chunk.usage is not None:
            tokens = chunk.usage.completion_tokens
    seconds = time.perf_counter() - start
    return Sample(seconds, first if first is not None else seconds, tokens, "".join(parts))


# --- llama-cpp-python on its own ----------------------------------------------------------------


@dataclass(slots=True)
class Raw:
    """A plain `Llama` and what `create_completion` gets: the engine's prompt and sampling."""

    llm: llama_cpp.Llama
    prompt: list[int]
    tokens: int
    repeat_penalty: float

    def _kwargs(self) -> dict[str, Any]:
        return {
            "max_tokens": self.tokens,
            "temperature": 0.0,
            "repeat_penalty": self.repeat_penalty,
        }

    def plain(self) -> Sample:
        start = time.perf_counter()
        result = cast(Any, self.llm.create_completion(self.prompt, **self._kwargs()))
        seconds = time.perf_counter() - start
        text = result["choices"][0]["text"]
        return Sample(seconds, seconds, result["usage"]["completion_tokens"], text)

    def streamed(self) -> Sample:
        start = time.perf_counter()
        first: float | None = None
        parts: list[str] = []
        finish = None
        chunks = self.llm.create_completion(self.prompt, stream=True, **self._kwargs())
        for chunk in cast(Any, chunks):
            piece, finish = chunk["choices"][0]["text"], chunk["choices"][0]["finish_reason"]
            if piece:
                parts.append(piece)
                if first is None:
                    first = time.perf_counter() - start
        seconds = time.perf_counter() - start
        # A stream has no usage: the tokens are those of the llama.cpp context past the prompt,
        # plus the last one when cut by the length (sampled, never evaluated).
        tokens = self.llm.n_tokens - len(self.prompt) + (finish == "length")
        return Sample(seconds, first if first is not None else seconds, tokens, "".join(parts))


def raw_model(spec: ModelSpec, engine: LlamaCppEngine, threads: int, tokens: int) -> Raw:
    """A `Llama` on the engine's file with the engine's settings, and the engine's prompt."""
    options = parse_options(spec)
    llm = llama_cpp.Llama(
        model_path=str(engine.model_path),
        n_ctx=options.n_ctx or spec.max_context_length,
        n_threads=threads,
        n_threads_batch=threads,
        verbose=False,
    )
    formatted = chat_formatter(llm)(
        messages=cast(Any, template_messages([{"role": "user", "content": PROMPT}]))
    )
    prompt = llm.tokenize(
        formatted.prompt.encode("utf-8"), add_bos=not formatted.added_special, special=True
    )
    return Raw(llm, prompt, tokens, options.repeat_penalty)


# --- one thread count ---------------------------------------------------------------------------


def _catalog(model: str, threads: int) -> list[ModelSpec]:
    return [
        spec.model_copy(update={"options": {**spec.options, "n_threads": threads}})
        if model in (spec.id, *spec.aliases)
        else spec
        for spec in load_catalog()
    ]


async def _timed(call: Callable[[], Awaitable[Sample]] | Callable[[], Sample]) -> Sample:
    result = call()
    return await result if isinstance(result, Awaitable) else result


def _check(name: str, samples: list[Sample], tokens: int, text: str) -> None:
    counts = sorted({s.tokens for s in samples})
    if counts != [tokens]:
        print(f"  ! {name}: {counts} output tokens, not {tokens}: speeds are not comparable")
    if any(s.text != text for s in samples):
        print(f"  ! {name}: text differs from the engine's plain answer")


async def measure(model: str, threads: int, runs: int, tokens: int) -> None:
    registry = EngineRegistry(_catalog(model, threads))
    resolved = registry.resolve(model)
    if resolved is None or not isinstance(resolved.engine, LlamaCppEngine):
        raise SystemExit(f"{model!r} is not a llama_cpp model of the catalog ([local] missing?)")
    engine = resolved.engine
    await engine.load()
    raw = raw_model(resolved.spec, engine, threads, tokens)
    request = ChatRequest(
        model=model,
        messages=[{"role": "user", "content": PROMPT}],
        temperature=0,
        max_tokens=tokens,
    )
    calls: dict[str, Callable[[], Awaitable[Sample]] | Callable[[], Sample]] = {
        "engine plain": lambda: engine_plain(engine, request),
        "raw plain": raw.plain,
        "engine streamed": lambda: engine_streamed(engine, request),
        "raw streamed": raw.streamed,
    }
    samples: dict[str, list[Sample]] = {name: [] for name in calls}
    for call in calls.values():  # warm-up: page the weights in, fill the caches
        await _timed(call)
    for run in range(runs):
        order = list(calls) if run % 2 == 0 else list(reversed(calls))
        for name in order:
            samples[name].append(await _timed(calls[name]))
    await registry.aclose()
    raw.llm.close()

    ctx = raw.llm.context_params
    print(
        f"n_threads {threads}: n_ctx {ctx.n_ctx}, n_batch {ctx.n_batch}, n_ubatch {ctx.n_ubatch}; "
        f"prompt {len(raw.prompt)} tokens, {tokens} output tokens asked, {runs} rounds; medians:"
    )
    reference = samples["engine plain"][0].text
    for name, runs_of in samples.items():
        _check(name, runs_of, tokens, reference)
    print(
        "             engine tok/s   library tok/s   ratio (range)       "
        "(decode after 1st token: e / lib)"
    )
    for kind in ("plain", "streamed"):
        mine, theirs = samples[f"engine {kind}"], samples[f"raw {kind}"]
        ratios = [m.speed / t.speed for m, t in zip(mine, theirs, strict=True)]
        line = (
            f"  {kind:<9} {statistics.median(s.speed for s in mine):10.1f}"
            f"   {statistics.median(s.speed for s in theirs):13.1f}"
            f"   {statistics.median(ratios):5.2f} ({min(ratios):.2f}-{max(ratios):.2f})"
        )
        if kind == "streamed":
            line += (
                f"   ({statistics.median(s.decode for s in mine):.1f}"
                f" / {statistics.median(s.decode for s in theirs):.1f})"
            )
        print(line)


async def main(model: str, runs: int, tokens: int, threads: list[int]) -> None:
    for count in threads:
        await measure(model, count, runs, tokens)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m-instruct")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    args = parser.parse_args()
    asyncio.run(main(args.model, args.runs, args.tokens, args.threads))
