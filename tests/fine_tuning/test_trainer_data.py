"""What the trainers feed the model: the loss on assistant turns only (a `weight: 0` message
left out), conversations rendered as the llama.cpp engine renders requests, batches a resumed
training sees again in the same order, and the learning-rate schedule."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from maestrale.fine_tuning.training.chat_data import IGNORE, encode, read_examples
from maestrale.fine_tuning.training.protocol import (
    DataFile,
    TrainingDataError,
    batch_indices,
    learning_rate,
)


def render(turns: list[dict[str, str]], generation: bool) -> str:
    """ChatML, as SmolLM2's template (with its default system prompt)."""
    if not turns or turns[0]["role"] != "system":
        turns = [{"role": "system", "content": "SYS"}, *turns]
    text = "".join(f"<|{t['role']}|>{t['content']}<|end|>" for t in turns)
    return text + ("<|assistant|>" if generation else "")


def tokenize(text: str) -> list[int]:
    return [ord(c) for c in text]


def trained_text(item: dict[str, Any], seq_len: int = 10_000) -> str:
    example = encode(item, render, tokenize, seq_len, 1.0)
    assert len(example.ids) == len(example.labels)
    return "".join(
        chr(t) for t, label in zip(example.ids, example.labels, strict=True) if label != IGNORE
    )


def test_the_loss_is_on_the_assistant_turns_only() -> None:
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello"},
        {"role": "user", "content": "bye"},
        {"role": "assistant", "content": "ciao", "weight": 0},
        {"role": "user", "content": "again"},
        {"role": "assistant", "content": "yes"},
    ]
    item: dict[str, Any] = {"messages": messages}
    example = encode(item, render, tokenize, 10_000, 2.0)
    whole = "".join(map(chr, example.ids))
    assert whole == render([{"role": m["role"], "content": m["content"]} for m in messages], False)
    assert trained_text(item) == "hello<|end|>yes<|end|>"
    assert example.weight == 2.0


def test_tool_calls_and_results_are_rendered_as_the_engine_renders_them() -> None:
    item = {
        "tools": [{"type": "function", "function": {"name": "weather", "parameters": {}}}],
        "messages": [
            {"role": "user", "content": "Weather in Rome?"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {"id": "c1", "function": {"name": "weather", "arguments": '{"city": "Rome"}'}}
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
            {"role": "assistant", "content": "It is sunny."},
        ],
    }
    example = encode(item, render, tokenize, 10_000, 1.0)
    whole = "".join(map(chr, example.ids))
    assert "weather" in whole.split("<|user|>")[0]  # the tools described in the system turn
    assert "<tool_response>" in whole and "sunny" in whole
    trained = trained_text(item)
    assert "<tool_call>" in trained and '"Rome"' in trained and "It is sunny." in trained
    assert "sunny<" not in trained.replace("It is sunny.", "")


def test_examples_are_cut_at_seq_len_and_files_without_answers_are_refused(
    tmp_path: Path,
) -> None:
    item = {
        "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "x" * 50}]
    }
    assert len(encode(item, render, tokenize, 20, 1.0).ids) == 20
    path = tmp_path / "data.jsonl"
    lines = [
        json.dumps(item),
        "not json",
        json.dumps({"messages": [{"role": "user", "content": "q"}]}),
    ]
    path.write_text("\n".join(lines) + "\n")
    assert len(read_examples([DataFile(str(path))], render, tokenize, 10_000)) == 1
    path.write_text(lines[2] + "\n")
    with pytest.raises(TrainingDataError):
        read_examples([DataFile(str(path))], render, tokenize, 10_000)


def test_a_resumed_training_sees_the_same_batches() -> None:
    run = [batch_indices(13, step, 8, seed=5) for step in range(10)]
    assert run == [batch_indices(13, step, 8, seed=5) for step in range(10)]
    assert run != [batch_indices(13, step, 8, seed=6) for step in range(10)]
    seen = [i for batch in run for i in batch]
    # Every example once per epoch, epochs one after the other.
    for epoch in range(len(seen) // 13):
        assert sorted(seen[epoch * 13 : (epoch + 1) * 13]) == list(range(13))
    # Fewer examples than a batch: the batch is all of them.
    assert sorted(batch_indices(3, 0, 8, seed=1)) == [0, 1, 2]


def test_the_learning_rate_warms_up_then_decays_to_zero() -> None:
    rates = [learning_rate(step, 100, 1e-3, 0.1) for step in range(100)]
    assert rates[0] == pytest.approx(1e-4)
    assert rates[9] == pytest.approx(1e-3)
    assert all(a >= b for a, b in itertools.pairwise(rates[9:]))
    assert rates[-1] < 2e-5
    assert learning_rate(0, 10, 1e-3, 0.0) == pytest.approx(1e-3)
