"""Completion fine-tuning: a LoRA of a llama-architecture GGUF chat model, trained on the CPU.

`python -m maestrale.fine_tuning.training.completion SPEC` (see `protocol.py`). transformers
reads the base GGUF (dequantized to float32); peft adds rank-16 adapters to every projection
of every layer; AdamW at the job's learning rate and weight decay, warm-up then linear decay,
batches of `BATCH_SIZE` conversations. After every `checkpoint_every` steps the adapters, the
optimizer and the step are saved (and the validation loss measured); at the end the adapters
are merged into the weights and the model is written as a GGUF beside the base
(`gguf_weights.write_replaced`), which the llama.cpp engine serves like its base.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

from maestrale.fine_tuning.training.chat_data import IGNORE, Example, read_examples
from maestrale.fine_tuning.training.gguf_weights import gguf_name, write_replaced
from maestrale.fine_tuning.training.protocol import (
    BATCH_SIZE,
    DataFile,
    TrainingDataError,
    TrainingSpec,
    batch_indices,
    emit,
    learning_rate,
    run_trainer,
    save_checkpoint,
)

LORA_RANK = 16
LORA_ALPHA = 32
TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
DEFAULT_SEQ_LEN = 2048
DEFAULT_WEIGHT_DECAY = 0.1
DEFAULT_WARMUP = 0.05


def load_base(gguf: Path) -> tuple[Any, Any]:
    """The tokenizer and the float32 model of a GGUF file, by transformers (no download)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_pretrained(
        gguf.parent, gguf_file=gguf.name, dtype=torch.float32
    )
    return tokenizer, model


def collate(examples: list[Example], pad: int) -> tuple[Any, Any, Any, Any]:
    """Padded ids, labels, attention mask and per-token loss weights of a batch."""
    import torch

    width = max(len(e.ids) for e in examples)
    ids = torch.tensor([e.ids + [pad] * (width - len(e.ids)) for e in examples])
    labels = torch.tensor([e.labels + [IGNORE] * (width - len(e.labels)) for e in examples])
    mask = torch.tensor([[1] * len(e.ids) + [0] * (width - len(e.ids)) for e in examples])
    weights = torch.tensor([e.weight for e in examples], dtype=torch.float32)
    return ids, labels, mask, weights


def batch_loss(model: Any, batch: tuple[Any, Any, Any, Any]) -> tuple[Any, int, int]:
    """(weighted mean token loss, tokens in the loss, tokens predicted right) of a batch."""
    import torch

    ids, labels, mask, weights = batch
    logits = model(input_ids=ids, attention_mask=mask).logits[:, :-1, :]
    targets = labels[:, 1:]
    losses = torch.nn.functional.cross_entropy(
        logits.reshape(-1, logits.shape[-1]),
        targets.reshape(-1),
        ignore_index=IGNORE,
        reduction="none",
    ).reshape(targets.shape)
    counted = (targets != IGNORE).float()
    token_weights = counted * weights[:, None]
    loss = (losses * token_weights).sum() / token_weights.sum().clamp(min=1e-9)
    right = int(((logits.argmax(-1) == targets) & (targets != IGNORE)).sum())
    return loss, int(counted.sum()), right


def evaluate(model: Any, examples: list[Example], pad: int) -> tuple[float | None, float | None]:
    """Validation loss (per token) and mean token accuracy, or (None, None) without data."""
    import torch

    if not examples:
        return None, None
    model.eval()
    total, tokens, right = 0.0, 0, 0
    with torch.no_grad():
        for start in range(0, len(examples), BATCH_SIZE):
            loss, counted, correct = batch_loss(
                model, collate(examples[start : start + BATCH_SIZE], pad)
            )
            total += float(loss) * counted
            tokens, right = tokens + counted, right + correct
    model.train()
    return (total / tokens, right / tokens) if tokens else (None, None)


def train(spec: TrainingSpec) -> None:
    import torch
    from peft import (
        LoraConfig,
        get_peft_model,
        get_peft_model_state_dict,
        set_peft_model_state_dict,
    )

    began = time.perf_counter()
    torch.set_num_threads(max(1, spec.threads))
    torch.manual_seed(spec.seed)
    if spec.base_model is None:
        raise TrainingDataError("no base model file")
    tokenizer, model = load_base(Path(spec.base_model))
    hp = spec.hyperparameters
    seq_len = int(hp.get("seq_len") or DEFAULT_SEQ_LEN)

    def render(turns: list[dict[str, str]], generation: bool) -> str:
        text = tokenizer.apply_chat_template(
            turns, tokenize=False, add_generation_prompt=generation
        )
        return str(text)

    def tokenize(text: str) -> list[int]:
        return list(tokenizer(text, add_special_tokens=False)["input_ids"])

    train_set = read_examples(spec.training_files, render, tokenize, seq_len)
    valid_files = [DataFile(path) for path in spec.validation_files]
    valid_set = read_examples(valid_files, render, tokenize, seq_len) if valid_files else []
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    lora = LoraConfig(
        r=LORA_RANK,
        lora_alpha=LORA_ALPHA,
        lora_dropout=0.0,
        target_modules=TARGETS,
        task_type="CAUSAL_LM",
    )
    model = get_peft_model(model, lora)
    trainable = [p for p in model.parameters() if p.requires_grad]
    weight_decay = hp.get("weight_decay")
    optimizer = torch.optim.AdamW(
        trainable,
        lr=float(hp["learning_rate"]),
        weight_decay=DEFAULT_WEIGHT_DECAY if weight_decay is None else float(weight_decay),
    )
    step, trained_tokens = 0, 0
    if spec.resume:
        state = torch.load(spec.resume, weights_only=False)
        set_peft_model_state_dict(model, state["adapter"])
        optimizer.load_state_dict(state["optimizer"])
        step, trained_tokens = int(state["step"]), int(state["trained_tokens"])
        torch.set_rng_state(state["rng"])
    emit("loaded", seconds=round(time.perf_counter() - began, 3), resumed_from=step)
    warmup = hp.get("warmup_fraction")
    warmup = DEFAULT_WARMUP if warmup is None else float(warmup)
    model.train()
    recent: list[float] = []
    stepping, stepped_tokens = 0.0, 0  # time in optimizer steps alone, and their tokens
    while step < spec.steps:
        step_began = time.perf_counter()
        rate = learning_rate(step, spec.steps, float(hp["learning_rate"]), warmup)
        for group in optimizer.param_groups:
            group["lr"] = rate
        picked = batch_indices(len(train_set), step, BATCH_SIZE, spec.seed)
        loss, _, _ = batch_loss(model, collate([train_set[i] for i in picked], pad))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        step += 1
        tokens = sum(len(train_set[i].ids) for i in picked)
        trained_tokens += tokens
        recent.append(float(loss))
        stepping += time.perf_counter() - step_began
        stepped_tokens += tokens
        if step % spec.checkpoint_every == 0 or step == spec.steps:
            state = {
                "adapter": get_peft_model_state_dict(model),
                "optimizer": optimizer.state_dict(),
                "rng": torch.get_rng_state(),
            }
            valid = evaluate(model, valid_set, pad)
            save_checkpoint(spec, step, state, recent, valid, trained_tokens)
            recent = []
    merged = model.merge_and_unload()
    weights = {
        name: tensor.detach().numpy()
        for name, tensor in merged.state_dict().items()
        if gguf_name(name) is not None
    }
    write_replaced(Path(spec.base_model), Path(spec.out), weights, name=spec.model_name)
    emit(
        "done",
        path=spec.out,
        steps=step,
        trained_tokens=trained_tokens,
        tokens_per_second=round(stepped_tokens / stepping, 1) if stepping else None,
    )


if __name__ == "__main__":
    run_trainer(train, sys.argv[1:])
