"""Fine-tuning on the CPU: training speed, the test's job end to end, and serving speed.

    .venv/bin/python -m bench.fine_tuning.run [--steps 16] [--rounds 5] [--tokens 96]
                                              [--no-transformers]

1. The job of `tests/fine_tuning/test_training_completion.py` (40 conversations teaching a
   codeword to SmolLM2-135M, 16 steps at learning rate 1e-3, a validation file) is created
   through the API of an in-process server whose worker trains it. Printed: the wall time from
   create to SUCCESS and where it goes (the trainer's start, training, writing the model), the
   trained tokens and the training tokens per second (padding included: what the CPU works on),
   the validation loss before and after, and whether the model answers the codeword.
2. Serving speed (output tokens per second at temperature 0, `--tokens` tokens of a story, the
   llama.cpp engine as the server runs it): the base model (Q4_1) beside the fine-tuned one
   (its trained projections in Q8_0), rounds interleaved. The peer is the other way the issue
   allowed: the same fine-tuned model served by transformers (`generate`, float32), the way a
   LoRA adapter is usually served in Python.
Figures are wall-clock on this machine (the load average is printed beside them); nothing
asserts on them.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import sqlalchemy as sa

from maestrale.app import create_app
from maestrale.core.migrate import upgrade
from maestrale.engines.registry import EngineRegistry
from maestrale.engines.specs import load_catalog
from maestrale.engines.types import ChatRequest
from maestrale.fine_tuning.tables import FineTuningCheckpoint, FineTuningEvent, FineTuningJob
from tests.fine_tuning.test_training_completion import CODEWORD, QUESTION, conversations
from tests.support.app_fixtures import API_KEY
from tests.support.app_fixtures import test_settings as make_settings

BASE = "smollm2-135m-instruct"
STORY = "Write a long story about a lighthouse keeper and a storm."


async def train(steps: int, data: Path) -> dict[str, Any]:
    url = f"sqlite+aiosqlite:///{data / 'bench.sqlite'}"
    await asyncio.to_thread(upgrade, url)
    app = create_app(make_settings(url, data / "data", worker=True, job_poll_seconds=0.2))
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        headers = {"Authorization": f"Bearer {API_KEY}"}
        async with httpx.AsyncClient(
            transport=transport, base_url="http://bench", headers=headers, timeout=60
        ) as client:
            examples = conversations()
            ids = []
            for name, items in (("train.jsonl", examples[:40]), ("valid.jsonl", examples[40:])):
                content = "".join(json.dumps(item) + "\n" for item in items).encode()
                uploaded = await client.post(
                    "/v1/files", files={"file": (name, content)}, data={"purpose": "fine-tune"}
                )
                ids.append(uploaded.json()["id"])
            body = {
                "model": BASE,
                "training_files": [{"file_id": ids[0]}],
                "validation_files": [ids[1]],
                "hyperparameters": {"training_steps": steps, "learning_rate": 0.001},
            }
            dry = await client.post("/v1/fine_tuning/jobs?dry_run=true", json=body)
            began = time.perf_counter()
            created = await client.post("/v1/fine_tuning/jobs", json=body)
            job_id = created.json()["id"]
            while True:
                state = (await client.get(f"/v1/fine_tuning/jobs/{job_id}")).json()
                if state["status"] in ("SUCCESS", "FAILED", "CANCELLED"):
                    break
                await asyncio.sleep(0.2)
            wall = time.perf_counter() - began
            answer = await client.post(
                "/v1/chat/completions",
                json={
                    "model": state["fine_tuned_model"],
                    "messages": [{"role": "user", "content": QUESTION}],
                    "temperature": 0,
                    "max_tokens": 30,
                },
            )
        services = app.state.services
        async with services.db.sessionmaker() as session:
            job = await session.get(FineTuningJob, job_id)
            events = (
                (
                    await session.execute(
                        sa.select(FineTuningEvent)
                        .where(FineTuningEvent.job_id == job_id)
                        .order_by(FineTuningEvent.id)
                    )
                )
                .scalars()
                .all()
            )
            checkpoints = (
                (
                    await session.execute(
                        sa.select(FineTuningCheckpoint)
                        .where(FineTuningCheckpoint.job_id == job_id)
                        .order_by(FineTuningCheckpoint.step_number)
                    )
                )
                .scalars()
                .all()
            )
        assert job is not None and state["status"] == "SUCCESS", state
        at = {str((e.data or {}).get("status")): e.created_at for e in events}
        success = next(e.data or {} for e in events if (e.data or {}).get("status") == "SUCCESS")
        artifact = await services.artifacts.local(f"blob:fine_tuning/{job_id}/model.gguf")
        return {
            "wall": wall,
            "start": (at["RUNNING"] - at["STARTED"]).total_seconds(),
            "training": (checkpoints[-1].created_at - at["RUNNING"]).total_seconds(),
            "export": (at["SUCCESS"] - checkpoints[-1].created_at).total_seconds(),
            "tokens": job.trained_tokens or 0,
            "stepping": success.get("tokens_per_second"),
            "expected": dry.json()["expected_duration_seconds"],
            "valid_loss": (checkpoints[0].valid_loss, checkpoints[-1].valid_loss),
            "answer": answer.json()["choices"][0]["message"]["content"],
            "artifact": Path(artifact),
        }


async def serving(artifact: Path, rounds: int, tokens: int) -> dict[str, list[float]]:
    registry = EngineRegistry(load_catalog(None))
    resolved = registry.resolve(BASE)
    assert resolved is not None
    engine: Any = resolved.engine
    speeds: dict[str, list[float]] = {"base (Q4_1)": [], "fine-tuned (Q8_0 projections)": []}
    names = {"base (Q4_1)": BASE, "fine-tuned (Q8_0 projections)": str(artifact)}
    for i in range(rounds + 1):
        order = list(names) if i % 2 == 0 else list(reversed(names))
        for label in order:
            request = ChatRequest(
                model=names[label],
                messages=[{"role": "user", "content": STORY}],
                max_tokens=tokens,
                temperature=0,
            )
            began = time.perf_counter()
            result = await engine.chat(request)
            spent = time.perf_counter() - began
            if i:  # the first round loads the models
                speeds[label].append(result.usage.completion_tokens / spent)
    await registry.aclose()
    return speeds


def transformers_speed(artifact: Path, rounds: int, tokens: int) -> list[float]:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.set_num_threads(2)
    tokenizer = AutoTokenizer.from_pretrained(artifact.parent, gguf_file=artifact.name)
    model = AutoModelForCausalLM.from_pretrained(
        artifact.parent, gguf_file=artifact.name, dtype=torch.float32
    )
    inputs: Any = tokenizer.apply_chat_template(
        [{"role": "user", "content": STORY}],
        add_generation_prompt=True,
        return_tensors="pt",
        return_dict=True,
    )
    speeds = []
    for _ in range(rounds):
        began = time.perf_counter()
        out = model.generate(
            **inputs, max_new_tokens=tokens, min_new_tokens=tokens, do_sample=False
        )
        generated = out.shape[1] - inputs["input_ids"].shape[1]
        speeds.append(generated / (time.perf_counter() - began))
    return speeds


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--tokens", type=int, default=96)
    parser.add_argument("--no-transformers", action="store_true")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp)
        job = await train(args.steps, data)
        first, last = job["valid_loss"]
        print(f"load average at start of serving: {os.getloadavg()[0]:.2f}")
        print(
            f"job ({args.steps} steps, 40 conversations): {job['wall']:.1f} s create->SUCCESS "
            f"(the dry run expected {job['expected']} s)"
        )
        print(
            f"  trainer start {job['start']:.1f} s, training {job['training']:.1f} s, "
            f"model written {job['export']:.1f} s"
        )
        print(
            f"  trained tokens {job['tokens']}, "
            f"{job['tokens'] / job['training']:.0f} training tokens/s with the checkpoints "
            f"(validation, saving), {job['stepping']} in the optimizer steps alone"
        )
        print(f"  validation loss {first:.3f} -> {last:.3f}; answer: {job['answer']!r}")
        print(f"  codeword learned: {CODEWORD in job['answer']}")
        speeds = await serving(job["artifact"], args.rounds, args.tokens)
        for label, values in speeds.items():
            print(f"serving {label}: {statistics.median(values):.1f} tokens/s (median)")
        if not args.no_transformers:
            peer = transformers_speed(job["artifact"], max(2, args.rounds // 2), args.tokens)
            print(f"peer: transformers, same model: {statistics.median(peer):.1f} tokens/s")


if __name__ == "__main__":
    asyncio.run(main())
