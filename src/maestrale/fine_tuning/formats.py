"""The line formats of fine-tuning data: one check per job type, which takes a parsed JSONL line
and returns its text (what its tokens are counted on) or raises `ValueError` with a message that
starts with `where` (e.g. "file <id> line 7").

Completion: `{"messages": [{"role", "content", "tool_calls"?, "weight"?}], "tools"?}` with at
least one assistant message that has content or tool calls. Classifier: the classifier training
format (`maestrale.classifiers.training.parse_example`), labels checked against the job's
targets; a job without targets gets those its data names (`TargetCollector`): SDK 1.12.4 drops
`classifier_targets` from the body it sends (its JobIn serialises them as unset under current
pydantic releases), so its classifier jobs arrive without them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import orjson

from maestrale.engines.text import content_text

# (parsed line, where) → the line's text; ValueError when the line is not a valid example.
LineCheck = Callable[[Any, str], str]

ROLES = frozenset({"system", "user", "assistant", "tool"})
MAX_MESSAGES = 10_000


def _content(message: Mapping[str, Any], where: str, number: int) -> str:
    content = message.get("content")
    if content is None or isinstance(content, str):
        return content or ""
    if not isinstance(content, list):
        raise ValueError(f"{where}: messages[{number}].content must be a string or a list")
    for chunk in content:
        if not (
            isinstance(chunk, Mapping)
            and chunk.get("type", "text") == "text"
            and isinstance(chunk.get("text"), str)
        ):
            raise ValueError(
                f"{where}: messages[{number}].content may only hold text chunks "
                '({"type": "text", "text": "..."})'
            )
    return content_text(content)


def _tool_calls(message: Mapping[str, Any], where: str, number: int) -> str:
    calls = message.get("tool_calls")
    if calls is None:
        return ""
    if message.get("role") != "assistant":
        raise ValueError(f"{where}: messages[{number}]: only assistant messages have tool_calls")
    if not isinstance(calls, list) or not all(
        isinstance(call, Mapping)
        and isinstance(call.get("function"), Mapping)
        and isinstance(call["function"].get("name"), str)
        for call in calls
    ):
        raise ValueError(
            f"{where}: messages[{number}].tool_calls must be a list of "
            '{"function": {"name", "arguments"}} objects'
        )
    return orjson.dumps([call["function"] for call in calls]).decode()


def completion_line(item: Any, where: str) -> str:
    """A chat conversation to learn from: the text of its messages and tool calls."""
    if not isinstance(item, Mapping):
        raise ValueError(f"{where}: expected a JSON object")
    messages = item.get("messages")
    if not isinstance(messages, list) or not messages:
        raise ValueError(f"{where}: needs a non-empty `messages` list")
    if len(messages) > MAX_MESSAGES:
        raise ValueError(f"{where}: more than {MAX_MESSAGES} messages")
    tools = item.get("tools")
    if tools is not None and not (
        isinstance(tools, list) and all(isinstance(t, Mapping) for t in tools)
    ):
        raise ValueError(f"{where}: `tools` must be a list of objects")
    texts: list[str] = []
    answered = False
    for number, message in enumerate(messages):
        if not isinstance(message, Mapping):
            raise ValueError(f"{where}: messages[{number}] must be an object")
        role = message.get("role")
        if role not in ROLES:
            raise ValueError(
                f"{where}: messages[{number}].role must be one of {', '.join(sorted(ROLES))}"
            )
        if "weight" in message and message["weight"] not in (0, 1):
            raise ValueError(f"{where}: messages[{number}].weight must be 0 or 1")
        text, calls = _content(message, where, number), _tool_calls(message, where, number)
        if role == "assistant" and (text or calls):
            answered = True
        texts.extend(part for part in (text, calls) if part)
    if not answered:
        raise ValueError(f"{where}: needs an assistant message with content or tool_calls")
    return "\n".join(texts)


def _example(item: Any, where: str) -> tuple[str, dict[str, list[str]]]:
    # numpy comes with the classifiers' training module: imported on first use only.
    from maestrale.classifiers.training import parse_example

    return parse_example(item, where)


class TargetCollector:
    """The check of a classifier job given no targets: every target its lines label, with the
    labels seen (multi_class when a line gives one several)."""

    def __init__(self, max_targets: int, max_labels: int) -> None:
        self.max_targets, self.max_labels = max_targets, max_labels
        self.labels: dict[str, set[str]] = {}
        self.multi: set[str] = set()

    def __call__(self, item: Any, where: str) -> str:
        text, labels = _example(item, where)
        for name, values in labels.items():
            seen = self.labels.get(name)
            if seen is None:
                if len(self.labels) >= self.max_targets:
                    raise ValueError(f"{where}: more than {self.max_targets} targets")
                seen = self.labels[name] = set()
            seen.update(values)
            if len(seen) > self.max_labels:
                raise ValueError(f"{where}: target {name!r} has more than {self.max_labels} labels")
            if len(values) > 1:
                self.multi.add(name)
        return text

    def targets(self) -> list[dict[str, Any]]:
        """ClassifierTargetOut dicts, by name, labels sorted."""
        return [
            {
                "name": name,
                "labels": sorted(labels),
                "weight": 1.0,
                "loss_function": "multi_class" if name in self.multi else "single_class",
            }
            for name, labels in sorted(self.labels.items())
        ]


def classifier_line(targets: Sequence[Mapping[str, Any]]) -> LineCheck:
    """The check of a classifier job's lines: labels of known targets, each one of its labels
    (one label per line for a `single_class` target)."""
    known = {str(t["name"]): t for t in targets}

    def check(item: Any, where: str) -> str:
        text, labels = _example(item, where)
        for name, values in labels.items():
            target = known.get(name)
            if target is None:
                raise ValueError(
                    f"{where}: unknown target {name!r} (classifier_targets: "
                    f"{', '.join(repr(n) for n in known)})"
                )
            allowed = target["labels"]
            for value in values:
                if value not in allowed:
                    raise ValueError(
                        f"{where}: label {value!r} is not one of the labels of target {name!r}"
                    )
            if target["loss_function"] == "single_class" and len(values) > 1:
                raise ValueError(
                    f"{where}: target {name!r} is single_class: one label per line, "
                    f"not {len(values)}"
                )
        return text

    return check
