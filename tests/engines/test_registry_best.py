"""The model offered when a caller names none (`EngineRegistry.best`): the console's playground,
OCR annotations and search index summaries start on it."""

from __future__ import annotations

from typing import Any

from maestrale.catalog.service import base_card
from maestrale.engines.registry import EngineRegistry
from maestrale.engines.specs import ModelSpec, load_catalog


def spec(model_id: str, engine: str, *caps: str, context: int = 8192) -> ModelSpec:
    return ModelSpec(
        id=model_id, engine=engine, capabilities=list(caps), max_context_length=context
    )


def registry(*specs: ModelSpec) -> EngineRegistry:
    def made(_spec: ModelSpec) -> Any:
        return object()

    return EngineRegistry(list(specs), {s.engine: made for s in specs})


def test_a_real_engine_that_calls_functions_with_the_longest_context_wins() -> None:
    engines = registry(
        spec("echo", "builtin", "completion_chat", "function_calling", context=131072),
        spec("tiny", "llama_cpp", "completion_chat", "function_calling"),
        spec("no-tools", "openai_compat", "completion_chat", context=131072),
        spec("big", "openai_compat", "completion_chat", "function_calling", context=32768),
        spec("big-too", "openai_compat", "completion_chat", "function_calling", context=32768),
    )
    best = engines.best("completion_chat")
    assert best is not None and best.id == "big"  # the catalog's order breaks the tie
    assert registry(spec("echo", "builtin", "completion_chat")).best("completion_chat") is None


def test_the_default_catalog_offers_the_local_model_and_cards_claim_only_what_is_served() -> None:
    specs = {s.id: s for s in load_catalog()}
    best = EngineRegistry(
        [specs["maestrale-echo"], specs["smollm2-135m-instruct"]], {"llama_cpp": lambda s: object()}
    ).best("completion_chat")
    assert best is not None and best.id == "smollm2-135m-instruct"
    # The base of classifier jobs classifies nothing itself: its card must not say it does.
    flags = base_card(specs["e5-small-classifier"]).capabilities
    assert flags.fine_tuning and not flags.classification
