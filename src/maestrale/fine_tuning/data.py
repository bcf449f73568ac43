"""The training and validation files of a job, checked before it is created: each one a live
`fine-tune` file of the caller's workspace, together at most `MAX_DATA_BYTES`, and every line a
valid example of the job type. The first bad line is named ("file <id> line 7: ..."); up to
`invalid_sample_skip_percentage` of a file's lines may be bad and are skipped instead.

Two steps, so that no transaction stays open while the blobs are read: `data_files` reads the
rows, `read_examples` the blobs.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from dataclasses import dataclass, field

import orjson

from maestrale.core.blobs import BlobStore
from maestrale.core.errors import BadRequest, NotFound, PayloadTooLarge
from maestrale.files.repository import FileRepository
from maestrale.fine_tuning.formats import LineCheck

PURPOSE = "fine-tune"
MAX_DATA_BYTES = 64 * 1024 * 1024
MAX_EXAMPLE_BYTES = 1024 * 1024
MAX_LINES = 1_000_000


class InvalidTrainingData(BadRequest):
    code = "invalid_training_data"


class TrainingDataTooLarge(PayloadTooLarge):
    code = "training_data_too_large"


@dataclass(frozen=True, slots=True)
class DataFile:
    id: str
    blob_key: str
    size: int
    training: bool


async def data_files(
    files: FileRepository, training: Sequence[str], validation: Sequence[str]
) -> list[DataFile]:
    """The job's files, training ones first: 404 for a file the caller cannot see (missing,
    deleted, expired, another workspace's), 400 for another purpose, 413 past the size limit."""
    found: list[DataFile] = []
    for file_id, is_training in [*((f, True) for f in training), *((f, False) for f in validation)]:
        param = "training_files" if is_training else "validation_files"
        row = await files.get(file_id)
        if row is None:
            raise NotFound(f"file {file_id} not found", code="file_not_found", param=param)
        if row.purpose != PURPOSE:
            raise InvalidTrainingData(
                f"file {file_id} has purpose {row.purpose!r}: fine-tuning reads files uploaded "
                f"with purpose {PURPOSE!r}",
                code="invalid_file_purpose",
                param=param,
            )
        found.append(DataFile(row.id, row.blob_key, row.size, is_training))
    total = sum(f.size for f in found)
    if total > MAX_DATA_BYTES:
        raise TrainingDataTooLarge(
            f"the job's files hold {total} bytes; a job reads at most {MAX_DATA_BYTES}",
            param="training_files",
        )
    return found


@dataclass(slots=True)
class Examples:
    """What the files hold: the training examples' texts (for token counts) and counts."""

    texts: list[str] = field(default_factory=list)
    validation: int = 0
    skipped: int = 0

    @property
    def training(self) -> int:
        return len(self.texts)


async def _physical_lines(
    chunks: AsyncIterator[bytes],
) -> AsyncGenerator[tuple[int, bytes | None]]:
    """(line number as an editor shows it, line) of every line; None for a line longer than
    `MAX_EXAMPLE_BYTES`, which is never buffered whole."""
    number, carry, overflow = 0, bytearray(), False
    try:
        async for chunk in chunks:
            pieces = chunk.split(b"\n")
            for i, piece in enumerate(pieces):
                if overflow or len(carry) + len(piece) > MAX_EXAMPLE_BYTES:
                    overflow = True
                    carry.clear()
                else:
                    carry += piece
                if i < len(pieces) - 1:
                    number += 1
                    yield number, None if overflow else bytes(carry)
                    carry.clear()
                    overflow = False
    finally:
        aclose = getattr(chunks, "aclose", None)
        if aclose is not None:  # a reader stopping early closes the blob
            await aclose()
    if carry or overflow:
        yield number + 1, None if overflow else bytes(carry)


def _parse(raw: bytes | None, check: LineCheck, where: str) -> str:
    if raw is None:
        raise ValueError(f"{where}: longer than {MAX_EXAMPLE_BYTES} bytes")
    try:
        item = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise ValueError(f"{where}: not valid JSON ({exc})") from exc
    return check(item, where)


async def _read_file(
    blobs: BlobStore, data: DataFile, check: LineCheck, skip_percentage: float, out: Examples
) -> None:
    lines = bad = 0
    first_bad: str | None = None
    texts: list[str] = []
    async with contextlib.aclosing(_physical_lines(blobs.get(data.blob_key))) as numbered:
        async for number, raw in numbered:
            if raw is not None and (not raw or raw.isspace()):
                continue
            lines += 1
            if lines > MAX_LINES:
                raise TrainingDataTooLarge(
                    f"file {data.id} has more than {MAX_LINES} lines", param="training_files"
                )
            try:
                text = _parse(raw, check, f"file {data.id} line {number}")
            except ValueError as exc:
                bad += 1
                first_bad = first_bad or str(exc)
                if skip_percentage == 0:
                    break
                continue
            texts.append(text)
    param = "training_files" if data.training else "validation_files"
    if first_bad is not None and bad * 100 > skip_percentage * lines:
        allowed = "" if skip_percentage == 0 else f" ({bad} of {lines} lines are invalid)"
        raise InvalidTrainingData(first_bad[:2000] + allowed, param=param)
    if not texts:
        raise InvalidTrainingData(f"file {data.id} holds no examples", param=param)
    out.skipped += bad
    if data.training:
        out.texts.extend(texts)
    else:
        out.validation += len(texts)


async def read_examples(
    blobs: BlobStore, files: Sequence[DataFile], check: LineCheck, skip_percentage: float
) -> Examples:
    """Every file's examples, checked with `check`; 400 naming the first bad line of a file
    with more bad lines than `skip_percentage` allows."""
    out = Examples()
    for data in files:
        try:
            await _read_file(blobs, data, check, skip_percentage, out)
        except KeyError as exc:  # the blob went away with its file, since the row was read
            raise NotFound(
                f"file {data.id} not found", code="file_not_found", param="training_files"
            ) from exc
    return out
