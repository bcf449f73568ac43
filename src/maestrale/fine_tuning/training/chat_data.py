"""Completion training data as token ids and labels: each conversation rendered with the model's
own chat template, exactly as the llama.cpp engine renders a request (tools described and calls
written the same way), with the loss on the assistant turns only."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from maestrale.engines.local.llama_tools import describe_tools, functions_of, template_messages
from maestrale.fine_tuning.training.protocol import DataFile, TrainingDataError

IGNORE = -100


@dataclass(slots=True)
class Example:
    ids: list[int]
    labels: list[int]  # IGNORE where no loss is taken
    weight: float  # the training file's weight

    @property
    def trained(self) -> int:
        return sum(1 for label in self.labels if label != IGNORE)


Render = Callable[[list[dict[str, str]], bool], str]  # (turns, add_generation_prompt) -> text
Tokenize = Callable[[str], list[int]]


def _turn_weights(messages: Sequence[dict[str, Any]]) -> list[bool]:
    """Whether each run of consecutive assistant messages is trained on (any of its messages
    has no `weight` or a non-zero one): the runs `template_messages` merges into one turn."""
    runs: list[bool] = []
    previous = None
    for message in messages:
        role = message.get("role")
        if role == "assistant":
            trained = message.get("weight", 1) != 0
            if previous == "assistant":
                runs[-1] = runs[-1] or trained
            else:
                runs.append(trained)
        previous = role
    return runs


def encode(
    item: dict[str, Any], render: Render, tokenize: Tokenize, seq_len: int, weight: float
) -> Example:
    """One conversation as an example, cut at `seq_len` tokens."""
    tools = item.get("tools")
    described = describe_tools(functions_of(tools)) if tools else None
    turns = template_messages(list(item["messages"]), described)
    trained_runs = iter(_turn_weights(item["messages"]))
    ids: list[int] = []
    labels: list[int] = []
    rendered = ""
    for i, turn in enumerate(turns):
        if turn["role"] == "assistant":
            before = render(turns[:i], True) if i else render([], True)
            after = render(turns[: i + 1], False)
            head = before[len(rendered) :] if before.startswith(rendered) else None
            if head is None or not after.startswith(before):
                raise TrainingDataError("the chat template does not render turns incrementally")
            head_ids = tokenize(head)
            ids += head_ids
            labels += [IGNORE] * len(head_ids)
            body = tokenize(after[len(before) :])
            ids += body
            labels += body if next(trained_runs, True) else [IGNORE] * len(body)
            rendered = after
    return Example(ids[:seq_len], labels[:seq_len], weight)


def read_examples(
    files: Sequence[DataFile], render: Render, tokenize: Tokenize, seq_len: int
) -> list[Example]:
    """Every usable example of the files (the API checked them; lines that fail here are
    skipped as the job's `invalid_sample_skip_percentage` allowed)."""
    examples = []
    for data in files:
        for line in Path(data.path).read_bytes().splitlines():
            if not line.strip():
                continue
            try:
                item = orjson.loads(line)
                example = encode(item, render, tokenize, seq_len, data.weight)
            except (orjson.JSONDecodeError, KeyError, TypeError, AttributeError):
                continue
            if example.trained:
                examples.append(example)
    if not examples:
        raise TrainingDataError("no example has an assistant turn to train on")
    return examples
