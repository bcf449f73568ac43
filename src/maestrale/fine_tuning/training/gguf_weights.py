"""Weights of a llama-architecture GGUF in Hugging Face terms, and a GGUF written back with some of
them replaced (a fine-tuned model served by the llama.cpp engine).

llama.cpp's converter stores the query and key projections with their rows permuted (rotary
pairs laid out per head); `permute` is that layout, so a weight trained in the Hugging Face layout
goes back through it. The replaced tensors are written as Q8_0: a LoRA's change to a weight is
far smaller than a 4-bit quantization step and would be lost in the base's Q4_1, but survives
8 bits (`tests/fine_tuning/test_gguf_weights.py` measures both).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

MODULES = {
    "self_attn.q_proj": "attn_q",
    "self_attn.k_proj": "attn_k",
    "self_attn.v_proj": "attn_v",
    "self_attn.o_proj": "attn_output",
    "mlp.gate_proj": "ffn_gate",
    "mlp.up_proj": "ffn_up",
    "mlp.down_proj": "ffn_down",
}
_HF = re.compile(r"^(?:base_model\.model\.)?model\.layers\.(\d+)\.(.+)\.weight$")

Array = npt.NDArray[np.float32]


class GGUFError(ValueError):
    """The GGUF cannot hold these weights (another architecture, a shape that differs)."""


def gguf_name(hf_name: str) -> str | None:
    """`model.layers.3.self_attn.q_proj.weight` -> `blk.3.attn_q.weight` (None: not a layer's
    projection)."""
    match = _HF.match(hf_name)
    if match is None or match.group(2) not in MODULES:
        return None
    return f"blk.{match.group(1)}.{MODULES[match.group(2)]}.weight"


def permute(weight: Array, n_head: int) -> Array:
    """The row order llama.cpp stores a query (or key) projection in."""
    rows = weight.shape[0]
    return (
        weight.reshape(n_head, 2, rows // n_head // 2, *weight.shape[1:])
        .swapaxes(1, 2)
        .reshape(weight.shape)
    )


def _field(reader: Any, key: str) -> Any:
    field = reader.fields.get(key)
    if field is None:
        raise GGUFError(f"the GGUF has no {key}")
    return field.contents()


def heads(reader: Any) -> tuple[int, int]:
    """(attention heads, key/value heads) of a llama GGUF."""
    arch = _field(reader, "general.architecture")
    if arch != "llama":
        raise GGUFError(f"only llama-architecture GGUFs can be fine-tuned, not {arch!r}")
    n_head = int(_field(reader, "llama.attention.head_count"))
    kv = reader.fields.get("llama.attention.head_count_kv")
    return n_head, int(kv.contents()) if kv is not None else n_head


def to_gguf_layout(name: str, weight: Array, n_head: int, n_kv: int) -> Array:
    """A Hugging Face weight in the layout of its GGUF tensor `name`."""
    if name.endswith(".attn_q.weight"):
        return permute(weight, n_head)
    if name.endswith(".attn_k.weight"):
        return permute(weight, n_kv)
    return weight


def write_replaced(
    base: Path, out: Path, replaced: Mapping[str, Array], *, name: str | None = None
) -> int:
    """Write `out`: the GGUF `base` (metadata and tensors) with the Hugging Face weights of
    `replaced` in place of theirs, quantized to Q8_0. Returns how many tensors were replaced.
    `name` becomes `general.name`."""
    import gguf  # the [training] extra
    from gguf.quants import quantize

    reader = gguf.GGUFReader(base)
    n_head, n_kv = heads(reader)
    mapped: dict[str, Array] = {}
    for hf_name, weight in replaced.items():
        target = gguf_name(hf_name)
        if target is None:
            raise GGUFError(f"{hf_name} is not a projection of a llama layer")
        mapped[target] = to_gguf_layout(target, np.asarray(weight, dtype=np.float32), n_head, n_kv)
    tensors = {tensor.name: tensor for tensor in reader.tensors}
    missing = sorted(set(mapped) - set(tensors))
    if missing:
        raise GGUFError(f"the base GGUF has no tensor {missing[0]}")
    writer = gguf.GGUFWriter(out, arch=str(_field(reader, "general.architecture")))
    for field in reader.fields.values():
        if field.name == gguf.Keys.General.ARCHITECTURE or field.name.startswith("GGUF."):
            continue
        kind = field.types[0]
        sub = field.types[-1] if kind == gguf.GGUFValueType.ARRAY else None
        value = name if field.name == gguf.Keys.General.NAME and name else field.contents()
        writer.add_key_value(field.name, value, kind, sub_type=sub)
    data: list[npt.NDArray[Any]] = []
    for tensor in reader.tensors:
        replacement = mapped.get(tensor.name)
        if replacement is None:
            data.append(tensor.data)
            writer.add_tensor_info(
                tensor.name,
                tensor.data.shape,
                tensor.data.dtype,
                tensor.data.nbytes,
                tensor.tensor_type,
            )
            continue
        expected = tuple(int(n) for n in reversed(tensor.shape.tolist()))
        if replacement.shape != expected:
            raise GGUFError(
                f"{tensor.name}: shape {replacement.shape} is not the base's {expected}"
            )
        quantized = quantize(replacement, gguf.GGMLQuantizationType.Q8_0)
        data.append(quantized)
        writer.add_tensor_info(
            tensor.name,
            quantized.shape,
            quantized.dtype,
            quantized.nbytes,
            gguf.GGMLQuantizationType.Q8_0,
        )
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    for array in data:
        writer.write_tensor_data(array)
    writer.close()
    return len(mapped)
