"""Guardrail configurations (validation, wire shape), the per-category decision, and the
echo moderation test double: no app, no database."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from maestrale.engines.builtin.moderation import EchoModerationEngine, verdict
from maestrale.engines.moderation_types import CATEGORIES, ModerationRequest
from maestrale.engines.types import EngineError
from maestrale.guardrails.check import (
    InvalidGuardrail,
    UnscoredCategory,
    checks_of,
    evaluate,
    input_text,
)
from maestrale.guardrails.schemas import GuardrailConfig, stored


def scored(**scores: float) -> dict[str, Any]:
    """A moderation verdict over the nine v1 categories; flagged from 0.5, as the models do."""
    values = {name: scores.get(name, 0.0) for name in CATEGORIES}
    return {"category_scores": values, "categories": {k: v >= 0.5 for k, v in values.items()}}


def check(config: dict[str, Any]) -> Any:
    [only] = checks_of([config])
    return only


def test_wire_shape_round_trips_with_defaults_written_out() -> None:
    config = GuardrailConfig.model_validate(
        {"moderation_llm_v1": {"custom_category_thresholds": {"pii": 0.2}, "action": "block"}}
    )
    assert config.wire() == {
        "block_on_error": False,
        "moderation_llm_v1": {
            "model_name": "mistral-moderation-2411",
            "custom_category_thresholds": {"pii": 0.2},
            "ignore_other_categories": False,
            "action": "block",
        },
    }
    v2 = GuardrailConfig.model_validate({"block_on_error": True, "moderation_llm_v2": {}})
    assert v2.wire() == {
        "block_on_error": True,
        "moderation_llm_v2": {
            "model_name": "mistral-moderation-2603",
            "ignore_other_categories": False,
        },
    }
    assert stored(None) is None and stored([config, v2]) == [config.wire(), v2.wire()]
    # What the SDK sends for an unset nullable part parses too.
    assert GuardrailConfig.model_validate({"moderation_llm_v1": {}, "moderation_llm_v2": None})


@pytest.mark.parametrize(
    ("config", "where"),
    [
        ({}, "needs `moderation_llm_v1` or `moderation_llm_v2`"),
        ({"moderation_llm_v1": None, "moderation_llm_v2": None}, "needs"),
        ({"moderation_llm_v1": {"action": "warn"}}, "action"),
        ({"moderation_llm_v1": {"custom_category_thresholds": {"pii": 1.5}}}, "pii"),
        ({"moderation_llm_v1": {"custom_category_thresholds": {"pii": -0.1}}}, "pii"),
        ({"moderation_llm_v1": {"model_name": ""}}, "model_name"),
    ],
)
def test_invalid_configurations_are_refused(config: dict[str, Any], where: str) -> None:
    with pytest.raises(ValidationError) as excinfo:
        GuardrailConfig.model_validate(config)
    assert where in str(excinfo.value)


@pytest.mark.parametrize(
    "config",
    [
        {"moderation_llm_v1": {"custom_category_thresholds": {"jailbreaking": 0.5}}},
        {"moderation_llm_v2": {"custom_category_thresholds": {"violence": 0.5}}},
        {"moderation_llm_v1": {"treshold": 0.5}},
        {"moderation_llm_v1": {}, "on_error": "block"},
    ],
)
def test_unknown_fields_are_ignored_and_not_stored(config: dict[str, Any]) -> None:
    """Forward compatible like every request (docs/architecture.md §1): a newer SDK's field is no
    error."""
    wire = GuardrailConfig.model_validate(config).wire()
    assert set(wire) <= {"block_on_error", "moderation_llm_v1", "moderation_llm_v2"}
    for part in ("moderation_llm_v1", "moderation_llm_v2"):
        assert not wire.get(part, {}).get("custom_category_thresholds")
        assert "treshold" not in wire.get(part, {})


def test_a_stored_configuration_that_is_invalid_is_a_clear_400() -> None:
    with pytest.raises(InvalidGuardrail) as excinfo:
        checks_of([{"moderation_llm_v1": {}}, {"moderation_llm_v1": {"action": "warn"}}])
    assert excinfo.value.status_code == 400
    assert "guardrails[1]" in excinfo.value.message and "action" in excinfo.value.message


def test_checks_of_a_configuration() -> None:
    [v1, v2] = checks_of(
        [
            {
                "block_on_error": True,
                "moderation_llm_v1": {"model_name": "m1", "ignore_other_categories": True},
                "moderation_llm_v2": {"action": "none", "custom_category_thresholds": {"pii": 0.3}},
            }
        ]
    )
    assert (v1.kind, v1.model, v1.action, v1.block_on_error) == (
        "moderation_llm_v1",
        "m1",
        "block",
        True,
    )
    assert v1.ignore_other_categories and v1.thresholds == {}
    assert (v2.kind, v2.model, v2.action) == (
        "moderation_llm_v2",
        "mistral-moderation-2603",
        "none",
    )
    assert v2.thresholds == {"pii": 0.3} and "jailbreaking" in v2.categories


def test_model_flags_count_without_thresholds() -> None:
    result = evaluate(check({"moderation_llm_v1": {}}), scored(sexual=0.7, pii=0.4))
    assert result["flagged_categories"] == ["sexual"]
    assert result["blocked"] and result["action"] == "block"  # an absent action blocks
    assert result["category_scores"]["pii"] == 0.4 and len(result["category_scores"]) == 9
    clean = evaluate(check({"moderation_llm_v1": {}}), scored(pii=0.4))
    assert clean["flagged_categories"] == [] and not clean["blocked"]


def test_custom_thresholds_replace_the_model_flag() -> None:
    config = {"moderation_llm_v1": {"custom_category_thresholds": {"pii": 0.3, "sexual": 0.8}}}
    result = evaluate(check(config), scored(pii=0.3, sexual=0.7, law=0.6))
    # pii reaches its threshold (>=), sexual stays under its own, law is flagged by the model.
    assert result["flagged_categories"] == ["law", "pii"]


def test_ignore_other_categories_counts_only_thresholded_ones() -> None:
    config = {
        "moderation_llm_v1": {
            "custom_category_thresholds": {"pii": 0.5},
            "ignore_other_categories": True,
            "action": "none",
        }
    }
    result = evaluate(check(config), scored(sexual=0.95, pii=0.2))
    assert result["flagged_categories"] == [] and not result["blocked"]
    assert evaluate(check(config), scored(pii=0.5))["flagged_categories"] == ["pii"]
    only = {"moderation_llm_v1": {"ignore_other_categories": True}}
    assert evaluate(check(only), scored(sexual=1.0))["flagged_categories"] == []


def test_v2_reads_dangerous_and_criminal_from_the_v1_category() -> None:
    config = {"moderation_llm_v2": {"custom_category_thresholds": {"criminal": 0.6}}}
    result = evaluate(check(config), scored(dangerous_and_criminal_content=0.55))
    # criminal: 0.55 < 0.6; dangerous has no threshold: the model's own flag (0.55 >= 0.5).
    assert result["flagged_categories"] == ["dangerous"]
    assert result["category_scores"]["criminal"] == 0.55
    assert "jailbreaking" not in result["category_scores"]  # not scored, not asked for


def test_v1_reads_the_larger_of_dangerous_and_criminal_from_a_v2_model() -> None:
    v2_scores = {"category_scores": {"dangerous": 0.2, "criminal": 0.7}, "categories": {}}
    config = {
        "moderation_llm_v1": {"custom_category_thresholds": {"dangerous_and_criminal_content": 0.6}}
    }
    result = evaluate(check(config), v2_scores)
    assert result["flagged_categories"] == ["dangerous_and_criminal_content"]


def test_a_threshold_on_a_category_the_model_does_not_score_is_a_400() -> None:
    config = {"moderation_llm_v2": {"custom_category_thresholds": {"jailbreaking": 0.5}}}
    with pytest.raises(UnscoredCategory) as excinfo:
        evaluate(check(config), scored())
    assert excinfo.value.status_code == 400 and "jailbreaking" in excinfo.value.message


def test_input_text_joins_the_messages_text() -> None:
    messages = [
        {"role": "system", "content": "be nice"},
        {"role": "user", "content": [{"type": "text", "text": "/flag pii"}, {"type": "image_url"}]},
        {"role": "tool", "content": "42"},
    ]
    assert input_text(messages) == "be nice\n/flag pii\n42"


def test_echo_moderation_directives() -> None:
    result = verdict("hello\n/flag pii\n/flag sexual 0.3\n/flag sexual 0.4\n/flag nonsense 1")
    assert result.category_scores == {**dict.fromkeys(CATEGORIES, 0.0), "pii": 0.9, "sexual": 0.4}
    assert [c for c, flagged in result.categories.items() if flagged] == ["pii"]
    # Lines that do not parse are text: nothing flagged.
    for text in ("/flag", "/flag pii 1.5", "/flag pii x", "/flagpii", "say /flag pii", "/fail 503"):
        assert not any(verdict(text).categories.values()), text
    with pytest.raises(EngineError) as excinfo:
        verdict("/moderation-fail 503")
    assert excinfo.value.status == 503
    assert verdict("/moderation-fail 200").category_scores["pii"] == 0.0


async def test_echo_moderation_engine_scores_each_input() -> None:
    result = await EchoModerationEngine().moderate(
        ModerationRequest("maestrale-echo-moderation", ["/flag law 0.5", "clean text here"])
    )
    assert [r.categories["law"] for r in result.results] == [True, False]
    assert result.usage.prompt_tokens == 6  # three tokens each
