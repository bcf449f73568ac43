"""Engine-level request and result types, shared by every implementation.

Messages, tools and deltas stay in the platform's wire format (plain dicts): the gateway validates
them once at the edge, and OpenAI-compatible engines forward them without re-encoding.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

Message = dict[str, Any]
# One generated token's log-probability in the platform's (and OpenAI's) wire shape:
# {"token", "logprob", "bytes", "token_id", "top_logprobs": [{"token", "logprob", "bytes",
# "token_id"}, ...]}, mistralai 3.x's ChatCompletionResponseTokenLogprobsTopK.
TokenLogprob = dict[str, Any]

# The optional fields of a chat request that not every engine can honour: an engine lists those
# it honours (`protocols.ChatOptions`), and a request setting another is refused with a 400 that
# names the model, never answered as if it had not been sent.
CHAT_OPTIONS = frozenset(
    {"top_k", "repetition_penalty", "min_tokens", "logprobs", "prompt_logprobs"}
)


@dataclass(slots=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def as_dict(self) -> dict[str, int]:
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.total_tokens,
        }


@dataclass(slots=True)
class ChatRequest:
    """A chat completion request as an engine sees it (model already resolved)."""

    model: str
    messages: list[Message]
    tools: list[dict[str, Any]] | None = None
    tool_choice: str | dict[str, Any] | None = None
    parallel_tool_calls: bool = True
    response_format: dict[str, Any] | None = None
    max_tokens: int | None = None
    stop: list[str] = field(default_factory=list)
    temperature: float | None = None
    top_p: float | None = None
    random_seed: int | None = None
    n: int = 1
    presence_penalty: float | None = None
    frequency_penalty: float | None = None
    # The `CHAT_OPTIONS`, None (or False) when not asked for.
    top_k: int | None = None
    repetition_penalty: float | None = None
    min_tokens: int | None = None
    # `top_logprobs` alternatives per token (0: the chosen token only); None: no logprobs.
    logprobs: int | None = None
    prompt_logprobs: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    # A GGUF file to serve in place of the engine's own weights (a fine-tuned model's).
    weights: str | None = None

    def options(self) -> set[str]:
        """The `CHAT_OPTIONS` this request sets."""
        asked = {
            "top_k": self.top_k,
            "repetition_penalty": self.repetition_penalty,
            "min_tokens": self.min_tokens,
            "logprobs": self.logprobs,
            "prompt_logprobs": self.prompt_logprobs,
        }
        return {name for name, value in asked.items() if value is not None}


@dataclass(slots=True)
class FimRequest:
    model: str
    prompt: str
    suffix: str | None = None
    max_tokens: int | None = None
    min_tokens: int | None = None
    stop: list[str] = field(default_factory=list)
    temperature: float | None = None
    top_p: float | None = None
    random_seed: int | None = None
    # As `ChatRequest.weights`.
    weights: str | None = None


@dataclass(slots=True)
class TextRequest:
    """A raw text completion (the legacy `/v1/completions`): `prompt` continued as plain text,
    with no chat template; `n` choices."""

    model: str
    prompt: str
    max_tokens: int | None = None
    stop: list[str] = field(default_factory=list)
    temperature: float | None = None
    top_p: float | None = None
    random_seed: int | None = None
    n: int = 1
    presence_penalty: float | None = None
    frequency_penalty: float | None = None
    # As `ChatRequest.logprobs`.
    logprobs: int | None = None
    # As `ChatRequest.weights`.
    weights: str | None = None


@dataclass(slots=True)
class Choice:
    index: int
    message: Message  # {"role": "assistant", "content": str | None, "tool_calls": [...] | None}
    finish_reason: str  # stop | length | tool_calls | error
    # The generated tokens' log-probabilities, when the request asked for them.
    logprobs: list[TokenLogprob] | None = None


@dataclass(slots=True)
class ChatResult:
    choices: list[Choice]
    usage: Usage


@dataclass(slots=True)
class ChatChunk:
    """One streamed delta. `usage` is set on the last chunk of the stream only."""

    index: int
    delta: Message  # {"role"?: "assistant", "content"?: str, "tool_calls"?: [...]}
    finish_reason: str | None = None
    usage: Usage | None = None
    # The log-probabilities of the tokens of this delta, when the request asked for them.
    logprobs: list[TokenLogprob] | None = None


@dataclass(slots=True)
class EmbeddingRequest:
    model: str
    inputs: list[str]
    output_dimension: int | None = None
    output_dtype: str = "float"


@dataclass(slots=True)
class EmbeddingResult:
    vectors: list[list[float]]
    usage: Usage


class EngineError(Exception):
    """An engine failed the way an upstream server would: `status` is the upstream's HTTP status.

    The gateway maps it to the client's status (4xx kept, 5xx → 502, timeouts → 504).
    """

    def __init__(self, status: int, message: str, *, code: str = "engine_error") -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code
