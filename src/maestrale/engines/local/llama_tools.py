"""Tool calling for the `llama_cpp` engine: tools in the prompt, calls constrained by a grammar.

The default model's chat template (SmolLM2's ChatML) knows nothing of tools, so the tools are
described in the system prompt in the Hermes format that many small open models were tuned on:
the functions as JSON inside `<tools></tools>`, a call as `<tool_call>\\n{"name": ..., "arguments":
{...}}\\n</tool_call>`, a tool's result as a user turn inside `<tool_response></tool_response>`.
Earlier calls and results of the conversation are written back in that format.

A call is sampled under a llama.cpp grammar built from a JSON schema: an object whose `name` is
the constant name of one of the allowed tools and whose `arguments` follow that tool's
`parameters` schema (llama.cpp's converter; keywords it ignores, such as `minimum`, are not
enforced; a schema it cannot convert, or a remote `$ref`, leaves that tool's arguments any JSON
object). So a call is always well-formed and names an offered tool, unless cut by `max_tokens`;
the strings and arrays that a tool's schema leaves unbounded are bounded to fit in the call's
budget (`llama_bounds`: the request's `max_tokens` within the engine's `max_call_tokens`, rounded
down to a power of two), so that a call cannot loop inside one. Grammars are built once per set
of tools and budget (`CallGrammars`).

`grounded` tells whether a drafted call takes a value from what the user asked: the engine makes
a call that the model found only somewhat likely (under tool_choice auto) when it does.
"""

from __future__ import annotations

import json
import re
import secrets
import string
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from llama_cpp.llama_grammar import LlamaGrammar

from maestrale.engines.local.llama_generate import checked_grammar, schema_gbnf
from maestrale.engines.local.llama_model import Vocabulary
from maestrale.engines.text import content_text
from maestrale.engines.types import ChatRequest, EngineError, Message

__all__ = [
    "CALL_PREFIX",
    "TOOL_TAG",
    "CallGrammars",
    "FunctionSpec",
    "ToolPlan",
    "describe_tools",
    "grounded",
    "parse_call",
    "plan_tools",
    "template_messages",
    "tool_call",
]

TOOL_TAG = "<tool_call>"
# What precedes a call's JSON: in the history, and after the prompt when a call is made.
CALL_PREFIX = TOOL_TAG + "\n"
_CALL_SUFFIX = "\n</tool_call>"

_NO_ARGUMENTS: dict[str, Any] = {"type": "object", "properties": {}}
_ANY_OBJECT: dict[str, Any] = {"type": "object"}
_ID_ALPHABET = string.ascii_letters + string.digits

_INSTRUCTIONS = (
    "You are a function calling AI model. You are provided with function signatures within "
    "<tools></tools> XML tags. You may call one of these functions to assist with the user "
    "query, or answer in plain text. Don't make assumptions about what values to plug into "
    "functions.\n<tools>\n{tools}\n</tools>\nTo call a function, return a JSON object with the "
    "function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n"
    '{{"name": <function-name>, "arguments": <args-json-object>}}\n</tool_call>'
)


@dataclass(frozen=True, slots=True)
class FunctionSpec:
    """One function tool, as the prompt describes it and the grammar constrains its calls."""

    name: str
    description: str
    parameters: dict[str, Any]

    def schema_key(self) -> str:
        """A stable text of what the grammar depends on (the cache key's part)."""
        return json.dumps([self.name, self.parameters], sort_keys=True, ensure_ascii=False)


@dataclass(frozen=True, slots=True)
class ToolPlan:
    """How the tools take part in one request (none when it offers none or says `none`)."""

    offered: tuple[FunctionSpec, ...]  # described in the prompt
    forced: bool  # tool_choice any / required / a named function: a call is made
    grammar: LlamaGrammar  # a call to one of the allowed tools (all, or the named one)
    asked: str = ""  # the text of the last user turn (what a drafted call must take a value from)


def functions_of(tools: Sequence[dict[str, Any]] | None) -> list[FunctionSpec]:
    """The function tools of a request (other tool types skipped), as the prompt describes them."""
    specs: list[FunctionSpec] = []
    for tool in tools or ():
        if not isinstance(tool, dict) or tool.get("type", "function") != "function":
            continue  # not a function tool: nothing this engine can call
        function = tool.get("function")
        if not isinstance(function, dict):
            continue
        name = function.get("name")
        if not isinstance(name, str) or not name:
            continue
        parameters = function.get("parameters")
        if not isinstance(parameters, dict) or not parameters:
            parameters = _NO_ARGUMENTS  # a function without parameters takes none
        description = function.get("description")
        specs.append(
            FunctionSpec(name, description if isinstance(description, str) else "", parameters)
        )
    return specs


def _named(choice: str | dict[str, Any] | None) -> str | None:
    if not isinstance(choice, dict):
        return None
    function = choice.get("function")
    name = function.get("name") if isinstance(function, dict) else None
    return name if isinstance(name, str) else ""


def plan_tools(
    request: ChatRequest, grammars: CallGrammars, vocab: Vocabulary, budget: int
) -> ToolPlan | None:
    """How `request` uses its tools, a call taking at most `budget` tokens: `None` when it offers
    none or its tool_choice is `none`; `EngineError(400)` for a named tool_choice that names none
    of its tools."""
    choice = request.tool_choice
    functions = functions_of(request.tools)
    if not functions:
        if choice in ("any", "required") or _named(choice) is not None:
            raise EngineError(
                400,
                "tool_choice demands a call but no function tool is offered",
                code="invalid_request",
            )
        return None
    if choice == "none":
        return None
    named = _named(choice)
    allowed = functions
    if named is not None:
        allowed = [f for f in functions if f.name == named]
        if not allowed:
            raise EngineError(
                400,
                f"tool_choice names {named!r}, which is not among the tools",
                code="invalid_request",
            )
    forced = named is not None or choice in ("any", "required")
    users = [m for m in request.messages if m.get("role") == "user"]
    asked = content_text(users[-1].get("content")) if users else ""
    return ToolPlan(tuple(functions), forced, grammars.get(vocab, allowed, budget), asked)


# Words that say nothing of what a call is about (a value made of them grounds no call).
_COMMON = frozenset(
    [
        "the",
        "and",
        "for",
        "you",
        "your",
        "what",
        "with",
        "this",
        "that",
        "are",
        "how",
        "who",
        "from",
        "about",
        "please",
        "can",
        "any",
        "now",
        "today",
        "get",
        "set",
        "one",
        "all",
        "not",
    ]
)
_WORDS = re.compile(r"\w+")


def _leaves(value: Any) -> list[str]:
    """The strings and numbers of a JSON value, at any depth, as text."""
    if isinstance(value, dict):
        return [leaf for item in value.values() for leaf in _leaves(item)]
    if isinstance(value, list):
        return [leaf for item in value for leaf in _leaves(item)]
    if isinstance(value, bool) or value is None:
        return []
    return [str(value)]


def grounded(arguments: str, asked: str) -> bool:
    """Whether the call's `arguments` (JSON text) take a value from `asked`: a word of three
    letters or more (not a common one), or a number, of one of its values is a word of `asked`."""
    try:
        value = json.loads(arguments)
    except ValueError:
        return False
    words = {w.lower() for w in _WORDS.findall(asked)} - _COMMON
    for leaf in _leaves(value):
        for word in _WORDS.findall(leaf):
            if (len(word) >= 3 or word.isdigit()) and word.lower() in words:
                return True
    return False


def describe_tools(functions: Sequence[FunctionSpec]) -> str:
    """The system prompt text that offers `functions` to the model."""
    lines = [
        json.dumps(
            {
                "type": "function",
                "function": {
                    "name": f.name,
                    "description": f.description,
                    "parameters": f.parameters,
                },
            },
            ensure_ascii=False,
        )
        for f in functions
    ]
    return _INSTRUCTIONS.format(tools="\n".join(lines))


def _json_or_text(text: str) -> Any:
    """`text` as the JSON value it holds, or as a string when it is not JSON."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def _call_block(call: Any) -> str:
    function = call.get("function") if isinstance(call, dict) else None
    if not isinstance(function, dict):
        return ""
    arguments = function.get("arguments")
    value = _json_or_text(arguments) if isinstance(arguments, str) else arguments
    body = json.dumps({"name": function.get("name"), "arguments": value}, ensure_ascii=False)
    return CALL_PREFIX + body + _CALL_SUFFIX


def _result_turn(name: str, text: str) -> str:
    result = json.dumps({"name": name, "content": _json_or_text(text)}, ensure_ascii=False)
    return f"<tool_response>\n{result}\n</tool_response>"


def template_messages(
    messages: list[Message], tools_text: str | None = None
) -> list[dict[str, str]]:
    """Wire messages as plain {role, content} turns that any chat template accepts.

    Past tool calls are written into their assistant turn as `<tool_call>` blocks and tool results
    become user turns holding a `<tool_response>` block (many templates reject other roles);
    consecutive turns of one role are merged, because many templates insist that roles alternate.
    `tools_text` (the offered tools) opens the system prompt.
    """
    names: dict[str, str] = {}  # tool_call_id -> the function it called
    turns: list[dict[str, str]] = []
    for message in messages:
        role = message.get("role")
        text = content_text(message.get("content"))
        if role == "assistant" and message.get("tool_calls"):
            calls = [c for c in message["tool_calls"] if isinstance(c, dict)]
            for call in calls:
                function = call.get("function")
                if isinstance(call.get("id"), str) and isinstance(function, dict):
                    names[call["id"]] = str(function.get("name"))
            blocks = [block for block in map(_call_block, calls) if block]
            text = "\n".join([text, *blocks] if text else blocks)
        elif role == "tool":
            name = message.get("name") or names.get(str(message.get("tool_call_id"))) or "tool"
            role, text = "user", _result_turn(str(name), text)
        elif role not in ("system", "user", "assistant"):
            role = "user"
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"] += "\n\n" + text
        else:
            turns.append({"role": str(role), "content": text})
    if tools_text is not None:
        if turns and turns[0]["role"] == "system":
            turns[0]["content"] = f"{tools_text}\n\n{turns[0]['content']}"
        else:
            turns.insert(0, {"role": "system", "content": tools_text})
    return turns


def _rebased(node: Any, base: str) -> Any:
    """`node` with its local `$ref`s ("#/...") pointing under `base` (where it now lives)."""
    if isinstance(node, list):
        return [_rebased(item, base) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: _rebased(value, base) for key, value in node.items()}
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        out["$ref"] = base + ref[1:]
    return out


def _convertible(schema: dict[str, Any], vocab: Vocabulary) -> bool:
    try:
        checked_grammar(vocab, schema_gbnf(schema), "tools")
    except Exception:  # the converter raises what it meets: all mean "cannot constrain"
        return False
    return True


def call_schema(functions: Sequence[FunctionSpec], vocab: Vocabulary) -> dict[str, Any]:
    """The JSON schema of one call to one of `functions`: `{"name": <const>, "arguments": <the
    function's parameters>}`, each function's parameters under `$defs` (its own `$ref`s
    rebased there), or any object where llama.cpp cannot convert them."""
    defs: dict[str, Any] = {}
    alternatives: list[dict[str, Any]] = []
    for index, function in enumerate(functions):
        key = f"tool{index}-arguments"
        parameters = function.parameters
        if not _convertible(parameters, vocab):
            parameters = _ANY_OBJECT
        defs[key] = _rebased(parameters, f"#/$defs/{key}")
        alternatives.append(
            {
                "type": "object",
                "properties": {
                    "name": {"const": function.name},
                    "arguments": {"$ref": f"#/$defs/{key}"},
                },
                "required": ["name", "arguments"],
            }
        )
    root = alternatives[0] if len(alternatives) == 1 else {"anyOf": alternatives}
    return {**root, "$defs": defs}


class CallGrammars:
    """Call grammars by set of allowed tools, the most recently used kept (worker thread only)."""

    def __init__(self, size: int = 32) -> None:
        self._size = size
        self._grammars: OrderedDict[str, LlamaGrammar] = OrderedDict()
        self.built = 0  # how many grammars were built (for tests)

    def get(
        self, vocab: Vocabulary, functions: Sequence[FunctionSpec], budget: int
    ) -> LlamaGrammar:
        """The grammar of one call to one of `functions` within `budget` tokens, rounded down to
        a power of two (built on first use)."""
        budget = 1 << (max(budget, 1).bit_length() - 1)
        key = "\n".join([str(budget), *(f.schema_key() for f in functions)])
        grammar = self._grammars.get(key)
        if grammar is not None:
            self._grammars.move_to_end(key)
            return grammar
        try:
            schema = call_schema(functions, vocab)
            grammar = checked_grammar(vocab, schema_gbnf(schema, budget), "tools")
        except Exception:  # every tool falls back to any object: a call is still well-formed
            generic = [FunctionSpec(f.name, f.description, _ANY_OBJECT) for f in functions]
            schema = call_schema(generic, vocab)
            grammar = checked_grammar(vocab, schema_gbnf(schema, budget), "tools")
        self.built += 1
        self._grammars[key] = grammar
        if len(self._grammars) > self._size:
            self._grammars.popitem(last=False)
        return grammar


def parse_call(text: str) -> tuple[str, str] | None:
    """The function name and arguments (JSON text) of a call the grammar let through, or `None`
    when `text` is not a complete call (cut by `max_tokens`)."""
    try:
        value = json.loads(text)
    except ValueError:
        return None
    if not isinstance(value, dict):
        return None
    name, arguments = value.get("name"), value.get("arguments")
    if not isinstance(name, str) or not isinstance(arguments, dict):
        return None
    return name, json.dumps(arguments, ensure_ascii=False)


def tool_call(name: str, arguments: str) -> dict[str, Any]:
    """A tool call in wire format, with a fresh id (9 letters and digits, as the platform's)."""
    call_id = "".join(secrets.choice(_ID_ALPHABET) for _ in range(9))
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": arguments},
        "index": 0,
    }
