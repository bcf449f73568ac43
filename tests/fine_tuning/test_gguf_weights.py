"""The fine-tuned GGUF: the trained projections written back in llama.cpp's layout (what
transformers' GGUF reader undoes), in Q8_0, everything else of the base kept byte for byte."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

gguf = pytest.importorskip("gguf")
transformers_gguf = pytest.importorskip("transformers.modeling_gguf_pytorch_utils")

from gguf.quants import dequantize, quantize  # noqa: E402

from maestrale.fine_tuning.training.gguf_weights import (  # noqa: E402
    GGUFError,
    gguf_name,
    permute,
    write_replaced,
)

HEADS, KV_HEADS, WIDTH = 4, 2, 64


def tiny_base(path: Path, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """A one-layer llama GGUF with Q8_0 projections; its tensors by name (as stored)."""
    writer = gguf.GGUFWriter(path, arch="llama")
    writer.add_name("tiny")
    writer.add_block_count(1)
    writer.add_head_count(HEADS)
    writer.add_head_count_kv(KV_HEADS)
    writer.add_embedding_length(WIDTH)
    writer.add_tokenizer_model("gpt2")
    writer.add_token_list(["a", "b", "c"])
    tensors = {
        "token_embd.weight": rng.standard_normal((3, WIDTH), dtype=np.float32),
        "blk.0.attn_q.weight": rng.standard_normal((WIDTH, WIDTH), dtype=np.float32),
        "blk.0.attn_k.weight": rng.standard_normal((WIDTH // 2, WIDTH), dtype=np.float32),
        "blk.0.attn_norm.weight": rng.standard_normal(WIDTH, dtype=np.float32),
    }
    for name, array in tensors.items():
        if array.ndim == 2 and name != "token_embd.weight":
            q = quantize(array, gguf.GGMLQuantizationType.Q8_0)
            writer.add_tensor(name, q, raw_dtype=gguf.GGMLQuantizationType.Q8_0)
        else:
            writer.add_tensor(name, array)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return tensors


def read(path: Path) -> tuple[dict[str, np.ndarray], dict[str, object]]:
    reader = gguf.GGUFReader(path)
    tensors = {t.name: dequantize(t.data, t.tensor_type) for t in reader.tensors}
    fields = {
        name: f.contents() for name, f in reader.fields.items() if not name.startswith("GGUF")
    }
    return tensors, fields


def test_names_and_the_permutation_transformers_undoes() -> None:
    assert gguf_name("model.layers.7.self_attn.q_proj.weight") == "blk.7.attn_q.weight"
    assert gguf_name("base_model.model.model.layers.0.mlp.down_proj.weight") == (
        "blk.0.ffn_down.weight"
    )
    assert gguf_name("model.layers.0.input_layernorm.weight") is None
    assert gguf_name("lm_head.weight") is None
    rng = np.random.default_rng(1)
    weight = rng.standard_normal((WIDTH, 8)).astype(np.float32)
    undo = transformers_gguf.LlamaTensorProcessor()._reverse_permute_weights
    assert np.array_equal(undo(permute(weight, HEADS), HEADS, HEADS), weight)
    assert np.array_equal(undo(permute(weight[:32], KV_HEADS), HEADS, KV_HEADS), weight[:32])
    assert not np.array_equal(permute(weight, HEADS), weight)


def test_replaced_projections_are_written_in_the_gguf_layout(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    base = tmp_path / "base.gguf"
    stored = tiny_base(base, rng)
    q_hf = rng.standard_normal((WIDTH, WIDTH), dtype=np.float32)
    k_hf = rng.standard_normal((WIDTH // 2, WIDTH), dtype=np.float32)
    out = tmp_path / "tuned.gguf"
    replaced = write_replaced(
        base,
        out,
        {
            "model.layers.0.self_attn.q_proj.weight": q_hf,
            "model.layers.0.self_attn.k_proj.weight": k_hf,
        },
        name="ft:tiny:x",
    )
    assert replaced == 2
    tensors, fields = read(out)
    undo = transformers_gguf.LlamaTensorProcessor()._reverse_permute_weights
    q_back = undo(tensors["blk.0.attn_q.weight"], HEADS, HEADS)
    k_back = undo(tensors["blk.0.attn_k.weight"], HEADS, KV_HEADS)
    assert np.abs(q_back - q_hf).max() < 0.02 * np.abs(q_hf).max()
    assert np.abs(k_back - k_hf).max() < 0.02 * np.abs(k_hf).max()
    assert np.array_equal(tensors["blk.0.attn_norm.weight"], stored["blk.0.attn_norm.weight"])
    assert np.array_equal(tensors["token_embd.weight"], stored["token_embd.weight"])
    base_fields = read(base)[1]
    assert fields["general.name"] == "ft:tiny:x"
    assert {k: v for k, v in fields.items() if k != "general.name"} == {
        k: v for k, v in base_fields.items() if k != "general.name"
    }


def test_a_weight_the_base_lacks_or_of_another_shape_is_refused(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    base = tmp_path / "base.gguf"
    tiny_base(base, rng)
    wrong = rng.standard_normal((WIDTH, 3), dtype=np.float32)
    with pytest.raises(GGUFError, match="shape"):
        write_replaced(base, tmp_path / "o.gguf", {"model.layers.0.self_attn.q_proj.weight": wrong})
    with pytest.raises(GGUFError, match="no tensor"):
        write_replaced(base, tmp_path / "o.gguf", {"model.layers.5.mlp.up_proj.weight": wrong})
    with pytest.raises(GGUFError, match="not a projection"):
        write_replaced(base, tmp_path / "o.gguf", {"lm_head.weight": wrong})


def test_a_lora_sized_change_survives_q8_0_but_not_q4_1() -> None:
    """Why the trained projections are not re-quantized like the base: the change a LoRA makes
    (here 0.5 % of the weights' scale) is mostly lost under Q4_1's step."""
    rng = np.random.default_rng(2)
    weight = rng.standard_normal((256, 576)).astype(np.float32) * 0.05
    change = rng.standard_normal(weight.shape).astype(np.float32) * 0.05 * 0.005

    def kept(kind: Any) -> float:
        def back(array: np.ndarray) -> np.ndarray:
            return dequantize(quantize(array, kind), kind)

        seen = (back(weight + change) - back(weight)).ravel()
        return float(np.corrcoef(seen, change.ravel())[0, 1])

    assert kept(gguf.GGMLQuantizationType.Q8_0) > 0.3
    assert kept(gguf.GGMLQuantizationType.Q4_1) < kept(gguf.GGMLQuantizationType.Q8_0) / 2
