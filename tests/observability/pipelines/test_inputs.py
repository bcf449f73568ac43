"""What a judge reads of a span, and which spans a config samples (no database)."""

from __future__ import annotations

from typing import Any

from maestrale.observability.pipelines.inputs import conversation, sampled


def _span(n: int, **attributes: Any) -> dict[str, Any]:
    return {
        "trace_id": f"{n:032x}",
        "span_id": f"{n:016x}",
        "name": "chat",
        "attributes": attributes,
        "resource_attributes": {"service.name": "api"},
    }


def test_sampling_is_fixed_by_ids_or_attribute() -> None:
    spans = [_span(n, **{"gen_ai.conversation.id": f"c{n % 4}"}) for n in range(400)]
    probabilistic = {"type": "probabilistic", "percentage": 30}
    chosen = [sampled(s, "cfg", probabilistic) for s in spans]
    assert chosen == [sampled(s, "cfg", probabilistic) for s in spans]  # a resumed run agrees
    assert 80 <= sum(chosen) <= 160
    assert not any(sampled(s, "cfg", {**probabilistic, "percentage": 0}) for s in spans)
    assert all(sampled(s, "cfg", None) for s in spans)
    # By attribute: a conversation is in or out whole, whatever the config.
    by_conversation = {"type": "attribute_hash", "attribute": "gen_ai.conversation.id"}
    decisions: dict[str, set[bool]] = {}
    for s in spans:
        for config in ("a", "b"):
            chosen_one = sampled(s, config, {**by_conversation, "percentage": 50})
            decisions.setdefault(s["attributes"]["gen_ai.conversation.id"], set()).add(chosen_one)
    assert all(len(d) == 1 for d in decisions.values())
    resource = {"type": "attribute_hash", "attribute": "service.name", "percentage": 100}
    assert sampled(spans[0], "a", resource)
    missing = {"type": "attribute_hash", "attribute": "absent", "percentage": 100}
    assert not sampled(spans[0], "a", missing)


def test_conversation_of_a_span() -> None:
    asked = '[{"role": "system", "parts": [{"type": "text", "content": "be kind"}]}, "hey"]'
    span = _span(1, **{"gen_ai.input.messages": asked, "app.q": "not json {"})
    assert conversation(span, {}) == [
        {"role": "system", "content": "be kind"},
        {"role": "user", "content": "hey"},
    ]
    # A mapping reads other attributes; a bare string is one message.
    assert conversation(span, {"input": "app.q", "output": "none"}) == [
        {"role": "user", "content": "not json {"}
    ]
    plain = conversation(_span(2, k=1), {})
    assert plain[0]["role"] == "user" and '"span_name": "chat"' in plain[0]["content"]
