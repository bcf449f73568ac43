"""Token-by-token generation with llama.cpp, run on the model's worker thread.

The loop is llama-cpp-python's sampler chain (llama.cpp's own samplers and grammar, in C) driven
by hand rather than `create_completion`, so that one code path serves plain and streamed answers
(a stream at temperature 0 concatenates to exactly the plain answer), token counts are exact, stop
strings never leak into a stream, and a cancellation is noticed between two tokens. The prompt
gets into the context through `PromptCache` (see there: what a reproducible request may reuse).
The Python work per token is constant: one token detokenized, the new text scanned for stop
strings.
"""

from __future__ import annotations

import codecs
import json
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import llama_cpp
import numpy as np
import numpy.typing as npt
from llama_cpp.llama_grammar import JSON_GBNF, LlamaGrammar, json_schema_to_gbnf

from maestrale.engines.local.llama_bounds import bounded_schema, json_string_cap
from maestrale.engines.local.llama_model import LoadedModel, Vocabulary
from maestrale.engines.types import EngineError, TokenLogprob

# llama-cpp-python's schema converter lets control characters (raw newlines...) into strings,
# which `json.loads` rejects; llama.cpp's own converter excludes them, and so do we.
_LOOSE_CHAR = r'char ::= [^"\\] |'
_STRICT_CHAR = r'char ::= [^"\\\x7F\x00-\x1F] |'
# Where the string rule of llama.cpp's JSON grammar repeats its characters without a bound.
_JSON_STRING_END = ')* "\\"" ws'
# A bounded repetition becomes nested optional groups in GBNF, one per repeat: llama.cpp refuses
# 2,000 of them and its parser overflows the stack (the process dies) on 100,000. Schemas whose
# bounds (or patterns' quantifiers, multiplied) exceed this, or grammars nested deeper or larger
# than these, are not converted.
MAX_REPEAT = 1000
_MAX_NESTING = MAX_REPEAT + 100
_MAX_GBNF = 1 << 20
_BOUNDS = ("minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties")
_QUANTIFIER = re.compile(r"\{(\d+)(?:,(\d*))?\}")


@dataclass(slots=True)
class Sampling:
    """How to pick tokens for one choice (llama.cpp's top_k 40 and min_p 0.05 apply on top)."""

    max_tokens: int
    temperature: float
    top_p: float
    seed: int
    stop: list[str] = field(default_factory=list)
    presence_penalty: float = 0.0
    frequency_penalty: float = 0.0
    repeat_penalty: float = 1.1
    grammar: LlamaGrammar | None = None
    # Tokens the first token may not be (their logits are set to -inf before the first draw).
    banned_first: npt.NDArray[np.intp] | None = None
    # The prompt's evaluation must be exactly one from scratch, not a reuse of the cached prefix
    # of the last request: llama.cpp's numerics differ slightly between the two, enough to change
    # a sample (see `PromptCache`).
    fresh: bool = False
    top_k: int = 40
    # The end-of-generation tokens may not be drawn before this many tokens (their logits are set
    # to -inf until then); stop strings still end the answer.
    min_tokens: int = 0
    ends: npt.NDArray[np.intp] | None = None
    # Log-probabilities of each drawn token, with this many alternatives (None: none kept).
    logprobs: int | None = None


@dataclass(slots=True)
class Outcome:
    """How one choice ended; filled in by `generate` as it goes."""

    finish_reason: str = "length"
    completion_tokens: int = 0
    stopped_by: str | None = None  # the stop string that ended it, if one did
    # With `Sampling.logprobs`: one entry per token of the text (`TokenLogprob`), in order.
    logprobs: list[TokenLogprob] = field(default_factory=list)


def checked_grammar(vocab: Vocabulary, gbnf: str, what: str = "response_format") -> LlamaGrammar:
    """`gbnf` as a grammar for sampling, or `EngineError(400)` (naming `what`) when llama.cpp
    cannot parse it."""
    # llama.cpp returns NULL for a grammar it cannot parse, and adding NULL to a sampler chain
    # crashes the process: build the grammar sampler once here and free it, to fail cleanly.
    sampler = llama_cpp.llama_sampler_init_grammar(vocab.handle, gbnf.encode(), b"root")
    if not sampler:
        raise EngineError(400, f"{what}: invalid grammar", code="invalid_request")
    llama_cpp.llama_sampler_free(sampler)
    return LlamaGrammar.from_string(gbnf, verbose=False)


def _check_repeats(node: Any) -> None:
    """`ValueError` when a repetition bound of `node` (a schema) exceeds `MAX_REPEAT`."""
    if isinstance(node, list):
        for item in node:
            _check_repeats(item)
        return
    if not isinstance(node, dict):
        return
    for key, value in node.items():
        if key in _BOUNDS and isinstance(value, int) and value > MAX_REPEAT:
            raise ValueError(f"{key} {value} is over {MAX_REPEAT}")
        if key == "pattern" and isinstance(value, str):
            product = 1
            for low, high in _QUANTIFIER.findall(value):
                product *= max(int(low), int(high or 0), 1)
                if product > MAX_REPEAT:
                    raise ValueError(f"the pattern's repetitions exceed {MAX_REPEAT}")
        _check_repeats(value)


def _nesting(gbnf: str) -> int:
    """The deepest nesting of parentheses in `gbnf`, outside literals and character classes."""
    deepest = depth = 0
    closing: str | None = None
    escaped = False
    for char in gbnf:
        if closing is not None:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == closing:
                closing = None
        elif char == '"':
            closing = '"'
        elif char == "[":
            closing = "]"
        elif char == "(":
            depth += 1
            deepest = max(deepest, depth)
        elif char == ")":
            depth -= 1
    return deepest


def schema_gbnf(schema: dict[str, Any], budget: int | None = None) -> str:
    """The GBNF grammar of the JSON values of `schema` (llama.cpp's converter, control characters
    kept out of strings), its unbounded strings and arrays bounded to fit in `budget` tokens when
    given (`llama_bounds`); `ValueError` for repetitions over `MAX_REPEAT` or a grammar that
    llama.cpp could not parse safely, and the converter raises what it meets on a schema it
    cannot convert."""
    _check_repeats(schema)
    if budget is not None:
        schema = bounded_schema(schema, budget)
    gbnf: str = json_schema_to_gbnf(json.dumps(schema))
    if len(gbnf) > _MAX_GBNF or _nesting(gbnf) > _MAX_NESTING:
        raise ValueError("the schema's grammar is too large")
    return gbnf.replace(_LOOSE_CHAR, _STRICT_CHAR)


def json_gbnf(budget: int) -> str:
    """llama.cpp's grammar of any JSON value, its strings bounded to `json_string_cap(budget)`
    characters."""
    cap = json_string_cap(budget)
    bounded = JSON_GBNF.replace(_JSON_STRING_END, _JSON_STRING_END.replace(")*", f"){{0,{cap}}}"))
    if bounded == JSON_GBNF:  # a llama-cpp-python release that writes its grammar otherwise
        raise RuntimeError("llama_cpp's JSON grammar has no string rule where expected")
    return bounded


def grammar_for(
    vocab: Vocabulary, response_format: dict[str, Any] | None, budget: int
) -> LlamaGrammar | None:
    """The grammar that constrains the output to the requested JSON (None for plain text), its
    strings and arrays bounded so that it ends within `budget` tokens (`llama_bounds`)."""
    kind = (response_format or {}).get("type")
    if kind == "json_object":
        return checked_grammar(vocab, json_gbnf(budget))
    if kind != "json_schema":
        return None
    schema = _schema_of(response_format)
    if schema is None:
        # A json_schema format without a schema constrains nothing beyond JSON itself.
        return checked_grammar(vocab, json_gbnf(budget))
    return checked_grammar(vocab, _converted(schema, budget))


def check_format(response_format: dict[str, Any]) -> None:
    """`EngineError(400)` for a JSON schema `grammar_for` cannot convert, found without the
    model (before a stream opens)."""
    schema = _schema_of(response_format) if response_format.get("type") == "json_schema" else None
    if schema is not None:
        _converted(schema, None)


def _schema_of(response_format: dict[str, Any] | None) -> dict[str, Any] | None:
    spec = (response_format or {}).get("json_schema")
    schema = spec.get("schema") if isinstance(spec, dict) else None
    return schema if isinstance(schema, dict) else None


def _converted(schema: dict[str, Any], budget: int | None) -> str:
    try:
        return schema_gbnf(schema, budget)
    except Exception as exc:  # the converter raises whatever it meets; all mean "unsupported"
        raise EngineError(
            400,
            f"json_schema: unsupported schema for the local model ({exc})",
            code="invalid_request",
        ) from exc


def _stop_at(text: str, stops: list[str], start: int) -> tuple[int, str] | None:
    """Where the earliest stop string found at or after `start` begins, and which, if any."""
    hits = [(i, s) for s in stops if (i := text.find(s, start)) >= 0]
    return min(hits) if hits else None


def _held_back(text: str, stops: list[str]) -> int:
    """How many trailing characters might be the beginning of a stop string (not sent yet)."""
    longest = 0
    for stop in stops:
        for size in range(min(len(stop) - 1, len(text)), longest, -1):
            if text.endswith(stop[:size]):
                longest = size
                break
    return longest


def _sampler(llm: llama_cpp.Llama, sampling: Sampling) -> Any:
    """llama-cpp-python's sampler chain, exactly as `Llama.generate` builds it (top_k 40 unless
    asked otherwise, min_p 0.05, penalties, grammar, then greedy at temperature 0 or a seeded
    draw)."""
    llm.set_seed(sampling.seed)
    return llm._init_sampler(
        temp=sampling.temperature,
        top_k=sampling.top_k,
        top_p=sampling.top_p,
        presence_penalty=sampling.presence_penalty,
        frequency_penalty=sampling.frequency_penalty,
        repeat_penalty=sampling.repeat_penalty,
        grammar=sampling.grammar,
    )


def generate(
    model: LoadedModel,
    prompt: list[int],
    sampling: Sampling,
    cancel: threading.Event,
    outcome: Outcome,
) -> Iterator[str]:
    """Yield the completion of `prompt` piece by piece; `outcome` says how it ended.

    Stops at an end-of-generation token or a stop string ("stop", the stop string excluded), at
    `max_tokens` ("length"), or as soon as `cancel` is set ("cancelled").
    """
    stops = [s for s in sampling.stop if s]
    longest_stop = max((len(s) for s in stops), default=0)
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    text, sent = "", 0
    if sampling.max_tokens <= 0:
        return
    llm, vocab = model.llm, model.vocab
    if cancel.is_set():
        outcome.finish_reason = "cancelled"
        return
    model.prompts.evaluate(prompt, fresh=sampling.fresh)
    if sampling.banned_first is not None and sampling.banned_first.size:
        logits = np.ctypeslib.as_array(
            llama_cpp.llama_get_logits_ith(llm.ctx, -1), shape=(llm.n_vocab(),)
        )
        logits[sampling.banned_first] = -np.inf
    sampler = _sampler(llm, sampling)
    starts: list[int] = []  # where each token's text starts (with logprobs)
    try:
        while True:
            if cancel.is_set():
                outcome.finish_reason = "cancelled"
                return
            if outcome.completion_tokens < sampling.min_tokens and sampling.ends is not None:
                _logits(llm)[sampling.ends] = -np.inf
            raw = _logits(llm).astype(np.float64) if sampling.logprobs is not None else None
            # Samples from the logits of the last evaluated token, and accepts the token.
            token = llama_cpp.llama_sampler_sample(sampler.sampler, llm.ctx, -1)
            if vocab.is_end(token):
                outcome.finish_reason = "stop"
                text += decoder.decode(b"", final=True)
                break
            outcome.completion_tokens += 1
            if raw is not None and sampling.logprobs is not None:
                starts.append(len(text))
                outcome.logprobs.append(token_logprob(llm, raw, token, sampling.logprobs))
            text += decoder.decode(llm.detokenize([token]))
            cut = _stop_at(text, stops, max(sent - longest_stop, 0))
            if cut is not None:
                text = text[: cut[0]]
                outcome.finish_reason, outcome.stopped_by = "stop", cut[1]
                # The tokens of the stop string are not part of the answer.
                kept = sum(1 for start in starts if start < cut[0])
                del outcome.logprobs[kept:]
                break
            ready = len(text) - _held_back(text, stops)
            if ready > sent:
                yield text[sent:ready]
                sent = ready
            if outcome.completion_tokens >= sampling.max_tokens:
                outcome.finish_reason = "length"
                text += decoder.decode(b"", final=True)
                break
            llm.eval([token])
    finally:
        sampler.close()
    if len(text) > sent:
        yield text[sent:]


def _logits(llm: llama_cpp.Llama) -> npt.NDArray[np.float32]:
    """The logits of the last evaluated token, in place (a view of llama.cpp's buffer)."""
    return np.ctypeslib.as_array(
        llama_cpp.llama_get_logits_ith(llm.ctx, -1), shape=(llm.n_vocab(),)
    )


def token_logprob(
    llm: llama_cpp.Llama, logits: npt.NDArray[np.float64], token: int, top: int
) -> TokenLogprob:
    """The log-probability (natural log, the model's own distribution: before temperature,
    top-k/top-p and grammar) of `token` under `logits`, with the `top` most likely tokens."""
    peak = float(logits.max())
    norm = peak + float(np.log(np.exp(logits - peak).sum()))

    def entry(candidate: int) -> dict[str, Any]:
        piece = llm.detokenize([candidate])
        return {
            "token": piece.decode("utf-8", errors="replace"),
            "logprob": float(logits[candidate]) - norm,
            "bytes": list(piece),
            "token_id": candidate,
        }

    alternatives: list[dict[str, Any]] = []
    if top > 0:
        best = np.argpartition(-logits, top)[:top]
        alternatives = [entry(int(t)) for t in best[np.argsort(-logits[best])]]
    return {**entry(token), "top_logprobs": alternatives}


def continuation_logprob(
    model: LoadedModel, context: list[int], following: list[int], fresh: bool = True
) -> float:
    """The log-probability (natural log) that the model gives to the tokens `following` right
    after `context`: the sum, over each following token, of its log-softmax under the model's
    logits at that point. The prompt is evaluated as for a reproducible sample unless `fresh` is
    false. The context holds `context` and all but the last of `following` afterwards.
    """
    llm = model.llm
    model.prompts.evaluate(context, fresh=fresh)
    n_vocab = llm.n_vocab()
    total = 0.0
    for position, token in enumerate(following):
        if position:
            llm.eval([following[position - 1]])
        # The last evaluated token's logits (llama.cpp keeps those of the batch's last token).
        raw = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(llm.ctx, -1), shape=(n_vocab,))
        logits = raw.astype(np.float64)
        top = float(logits.max())
        total += float(logits[token]) - top - float(np.log(np.exp(logits - top).sum()))
    return total
