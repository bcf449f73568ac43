"""Deterministic feature-hashing embeddings for the builtin engine.

Features of a text are its lowercase word tokens (`\\w+`) and the character trigrams of each
word padded with `#` ("cat" → "#ca", "cat", "at#"). Each feature is hashed with BLAKE2b (8 bytes)
to a dimension (hash mod dim) and a sign (the hash's top bit), added with weight 1, and the
vector is L2-normalised. Texts sharing words or word fragments share dimensions, so similar texts
score a higher cosine similarity than unrelated ones, which is all a test double needs.
"""

from __future__ import annotations

import hashlib
import math
import re

from maestrale.engines.types import EmbeddingRequest, EmbeddingResult, EngineError, Usage

DEFAULT_DIMENSION = 1024
MAX_DIMENSION = 8192
# Inputs longer than this in all (about 5 ms of hashing) are embedded in a thread.
OFF_LOOP_CHARS = 4096

_WORD = re.compile(r"\w+")


def words(text: str) -> list[str]:
    """The lowercase word tokens of `text`."""
    return _WORD.findall(text.lower())


def features(text: str) -> list[str]:
    """The hashed features of `text`: word and trigram features, prefixed so they never collide."""
    result: list[str] = []
    for word in words(text):
        result.append(f"w:{word}")
        padded = f"#{word}#"
        result.extend(f"t:{padded[i : i + 3]}" for i in range(len(padded) - 2))
    return result


def embed_text(text: str, dimension: int = DEFAULT_DIMENSION) -> list[float]:
    """The unit-length feature-hashing vector of `text` (all zeros for a text without words)."""
    vector = [0.0] * dimension
    for feature in features(text):
        digest = hashlib.blake2b(feature.encode(), digest_size=8).digest()
        number = int.from_bytes(digest, "big")
        vector[number % dimension] += -1.0 if number >> 63 else 1.0
    norm = math.sqrt(sum(x * x for x in vector))
    if norm == 0:
        return vector
    return [x / norm for x in vector]


def embed(request: EmbeddingRequest) -> EmbeddingResult:
    """Embed every input of `request`; usage counts words (at least one per input)."""
    if request.output_dtype != "float":
        raise EngineError(
            400,
            f"the builtin engine supports only float embeddings, not {request.output_dtype!r}",
            code="invalid_request",
        )
    if request.output_dimension is not None and not 1 <= request.output_dimension <= MAX_DIMENSION:
        raise EngineError(
            400,
            f"output_dimension must be between 1 and {MAX_DIMENSION}, "
            f"got {request.output_dimension}",
            code="invalid_request",
        )
    dimension = request.output_dimension or DEFAULT_DIMENSION
    vectors = [embed_text(text, dimension) for text in request.inputs]
    tokens = sum(max(len(words(text)), 1) for text in request.inputs)
    return EmbeddingResult(vectors=vectors, usage=Usage(prompt_tokens=tokens))
