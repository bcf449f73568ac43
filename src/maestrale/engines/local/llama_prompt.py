"""Getting a prompt into the llama.cpp context, reusing what the context already holds.

llama.cpp's results depend slightly on how a prompt is split into batches: a cached prefix plus the
rest evaluated on its own gives logits a little different from the whole prompt evaluated at once,
enough to change a sample. A reproducible request (a seed, or temperature 0) must not depend on the
request before it, so its prompt is evaluated from scratch, with one exception that costs nothing
in exactness: the prompt that the context last evaluated from scratch. The context still holds
that evaluation's KV cells, untouched as long as nothing was evaluated over them since, and the
logits it ended on are kept here: putting them back gives exactly the state a new evaluation would
give, without evaluating anything. Repeated requests, retries and the `n` choices of one request
(generated one after another) are served that way; without it each paid for the whole prompt
again (on a CPU, a 42-token prompt costs as much as 20 generated tokens).

Other requests reuse the longest prefix the context holds, as llama-cpp-python does.
"""

from __future__ import annotations

import llama_cpp
import numpy as np
import numpy.typing as npt


class PromptCache:
    """Evaluates prompts in the context of one `Llama`, remembering the last one evaluated from
    scratch. Used on the model's worker thread only.

    Whatever else evaluates tokens in this context must call `forget` first.
    """

    def __init__(self, llm: llama_cpp.Llama) -> None:
        self._llm = llm
        self._n_vocab = llm.n_vocab()
        # A recurrent model's state cannot be cut back to a prefix: it always starts afresh.
        self._rewindable = not (
            llama_cpp.llama_model_is_recurrent(llm.model)
            or llama_cpp.llama_model_is_hybrid(llm.model)
        )
        self._prompt: list[int] = []
        self._logits: npt.NDArray[np.float32] | None = None

    def evaluate(self, prompt: list[int], fresh: bool) -> None:
        """Make the context hold `prompt` (not empty), its last token's logits current.

        `fresh`: the result must be exactly that of an evaluation from scratch.
        """
        if self._restore(prompt):
            return
        llm = self._llm
        keep = 0 if fresh else self._held_prefix(prompt)
        if keep < len(self._prompt):
            self.forget()  # the cells of the remembered prompt are about to be overwritten
        if keep == 0:
            llm.reset()  # type: ignore[no-untyped-call]  # (llama-cpp-python leaves it unannotated)
        llm.n_tokens = keep  # the next evaluation drops the cells past `keep`
        llm.eval(prompt[keep:])
        if fresh:
            self._prompt = list(prompt)
            self._logits = self._current_logits().copy()

    def forget(self) -> None:
        """Stop trusting the context's cells: the next evaluation starts from scratch."""
        self._prompt, self._logits = [], None

    def _current_logits(self) -> npt.NDArray[np.float32]:
        # The last evaluated token's logits, in llama.cpp's own buffer (which its samplers read).
        pointer = llama_cpp.llama_get_logits_ith(self._llm.ctx, -1)
        return np.ctypeslib.as_array(pointer, shape=(self._n_vocab,))

    def _restore(self, prompt: list[int]) -> bool:
        size = len(prompt)
        if not self._rewindable or self._logits is None or prompt != self._prompt:
            return False
        llm = self._llm
        if llm.n_tokens < size:
            return False
        llm.n_tokens = size  # the tokens generated after it are dropped by the next evaluation
        self._current_logits()[:] = self._logits
        return True

    def _held_prefix(self, prompt: list[int]) -> int:
        """How many leading tokens of `prompt` the context holds, keeping at least the last one
        to evaluate (its logits are needed)."""
        if not self._rewindable:
            return 0
        held = self._llm.input_ids[: min(self._llm.n_tokens, len(prompt) - 1)]
        differ = np.flatnonzero(held != np.asarray(prompt[: len(held)], dtype=held.dtype))
        return int(differ[0]) if differ.size else len(held)
