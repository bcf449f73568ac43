"""Speed of the local chat model (SmolLM2-135M-Instruct on llama.cpp), loaded as the server does.

The engine comes from the built-in catalog through `EngineRegistry`, so the figures include the
engine's own overhead (worker thread, hand-off to the event loop, stop-string handling). Prints
the load time, then for plain and streamed generation the median over a few runs (temperature 0,
a fixed number of output tokens) of: latency, time to first token (streamed only; a plain answer
has none) and tokens per second.

    .venv/bin/python -m bench.local_model [--runs 5] [--tokens 64] [--threads N]
                                          [--model smollm2-135m-instruct]

`--threads` overrides the catalog entry's `n_threads` option (default: 2, or 1 on 2 cores).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

from maestrale.catalog.config import load_catalog
from maestrale.engines.local.llama_cpp import LlamaCppEngine
from maestrale.engines.registry import EngineRegistry
from maestrale.engines.types import ChatRequest

PROMPT = "Write a long story about a dragon who learns to sing."


def _request(model: str, tokens: int) -> ChatRequest:
    return ChatRequest(
        model=model,
        messages=[{"role": "user", "content": PROMPT}],
        temperature=0,
        max_tokens=tokens,
    )


async def _plain(engine: LlamaCppEngine, request: ChatRequest) -> tuple[float, int]:
    start = time.perf_counter()
    result = await engine.chat(request)
    return time.perf_counter() - start, result.usage.completion_tokens


async def _streamed(engine: LlamaCppEngine, request: ChatRequest) -> tuple[float, float, int]:
    start = time.perf_counter()
    first: float | None = None
    tokens = 0
    async for chunk in engine.chat_stream(request):
        if first is None and chunk.delta.get("content"):
            first = time.perf_counter() - start
        if chunk.usage is not None:
            tokens = chunk.usage.completion_tokens
    total = time.perf_counter() - start
    return total, first if first is not None else total, tokens


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:8.1f} ms"


async def main(model: str, runs: int, tokens: int, threads: int | None) -> None:
    start = time.perf_counter()
    specs = load_catalog()
    if threads is not None:
        specs = [
            spec.model_copy(update={"options": {**spec.options, "n_threads": threads}})
            if model in (spec.id, *spec.aliases)
            else spec
            for spec in specs
        ]
    registry = EngineRegistry(specs)
    built = time.perf_counter() - start
    resolved = registry.resolve(model)
    if resolved is None or not isinstance(resolved.engine, LlamaCppEngine):
        raise SystemExit(
            f"{model!r} is not a llama_cpp model of the catalog (is [local] installed?)"
        )
    engine = resolved.engine
    start = time.perf_counter()
    await engine.load()
    loaded = time.perf_counter() - start
    threads_used = resolved.spec.options.get("n_threads", "default")
    print(f"model {resolved.spec.id}: {engine.model_path.name}, n_threads {threads_used}")
    print(f"catalog + engines built {_ms(built)}; model loaded {_ms(loaded)}")

    request = _request(model, tokens)
    await engine.chat(request)  # warm-up: page the weights in
    plain = [await _plain(engine, request) for _ in range(runs)]
    streamed = [await _streamed(engine, request) for _ in range(runs)]
    await registry.aclose()

    produced = plain[0][1]
    note = "" if produced == tokens else f" (the model stopped after {produced})"
    print(f"{runs} runs each, temperature 0, {tokens} output tokens asked{note}; medians:")
    latency = statistics.median(t for t, _ in plain)
    speed = statistics.median(n / t for t, n in plain)
    print(f"  plain     latency {_ms(latency)}                        {speed:7.1f} tokens/s")
    latency = statistics.median(t for t, _, _ in streamed)
    first = statistics.median(f for _, f, _ in streamed)
    speed = statistics.median(n / t for t, _, n in streamed)
    # Decode speed once the first token is out: the prompt's evaluation is excluded.
    decode = statistics.median((n - 1) / (t - f) for t, f, n in streamed if n > 1 and t > f)
    print(
        f"  streamed  latency {_ms(latency)}  first token {_ms(first)}  {speed:7.1f} tokens/s"
        f"  ({decode:.1f} tokens/s after the first)"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m-instruct")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args()
    asyncio.run(main(args.model, args.runs, args.tokens, args.threads))
