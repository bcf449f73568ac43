"""What a job must be to be created, before any file is read: rules across the fields of the
body (400 naming them) and a base model of the catalog that can be trained here."""

from __future__ import annotations

import re
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from maestrale.catalog.repository import FineTunedModelRepository
from maestrale.catalog.service import ModelNotFound
from maestrale.core.auth.principal import Tenant
from maestrale.core.errors import BadRequest
from maestrale.engines.registry import EngineRegistry
from maestrale.engines.specs import ModelSpec
from maestrale.fine_tuning.estimates import Plan
from maestrale.fine_tuning.schemas import JobIn

SUFFIX = re.compile(r"[A-Za-z0-9_-]{1,18}")
DEFAULT_LEARNING_RATE = 1e-4
DEFAULT_WEIGHT_DECAY = 0.1
DEFAULT_WARMUP_FRACTION = 0.05
# Longer examples are truncated; capped by the base model's context.
DEFAULT_SEQ_LEN = {"completion": 2048, "classifier": 512}
# The capabilities of which each job type needs one in its base model, besides `fine_tuning`: a
# classifier job trains a head over a classifier's embeddings, or over a base that has none yet.
NEEDS = {
    "completion": ("completion_chat",),
    "classifier": ("classification", "classifier_training"),
}


class InvalidJob(BadRequest):
    code = "invalid_fine_tuning_job"


class NotFineTunable(BadRequest):
    code = "model_not_fine_tunable"


def job_type_of(body: JobIn) -> str:
    """As given; else a classifier job when classifier targets are given, else completion."""
    if body.job_type is not None:
        return body.job_type
    return "classifier" if body.classifier_targets else "completion"


def check_body(body: JobIn, job_type: str) -> None:
    """The rules across fields, and what this server does not do (400 with the reason)."""
    hyper = body.hyperparameters
    if body.suffix is not None and not SUFFIX.fullmatch(body.suffix):
        raise InvalidJob(
            "suffix must be 1 to 18 characters among A-Z, a-z, 0-9, '_' and '-'", param="suffix"
        )
    if hyper.epochs is not None and hyper.training_steps is not None:
        raise InvalidJob(
            "give hyperparameters.epochs or hyperparameters.training_steps, not both",
            param="hyperparameters",
        )
    if body.integrations:
        raise InvalidJob(
            "integrations are not supported: Weights & Biases needs the internet, and this "
            "server trains locally",
            code="integrations_unsupported",
            param="integrations",
        )
    if body.repositories:
        raise InvalidJob(
            "repositories are not supported: give the training data as files",
            code="repositories_unsupported",
            param="repositories",
        )
    if hyper.fim_ratio is not None and job_type == "classifier":
        raise InvalidJob(
            "fim_ratio is a hyperparameter of completion jobs", param="hyperparameters.fim_ratio"
        )
    if hyper.fim_ratio:
        raise InvalidJob(
            "fill-in-the-middle training is not supported: the local base models have no FIM "
            "tokens (give fim_ratio 0 or none)",
            code="fim_unsupported",
            param="hyperparameters.fim_ratio",
        )
    _check_files(body)
    _check_targets(body, job_type)


def _check_files(body: JobIn) -> None:
    training = [f.file_id for f in body.training_files]
    validation = body.validation_files or []
    if not training:
        raise InvalidJob("give at least one training file", param="training_files")
    for ids, param in ((training, "training_files"), (validation, "validation_files")):
        if len(set(ids)) != len(ids):
            raise InvalidJob(f"{param} names a file twice", param=param)
    both = sorted(set(training) & set(validation))
    if both:
        raise InvalidJob(
            f"file {both[0]} is both a training and a validation file", param="validation_files"
        )


def _check_targets(body: JobIn, job_type: str) -> None:
    targets = body.classifier_targets or []
    if job_type == "completion":
        if targets:
            raise InvalidJob(
                "classifier_targets are for classifier jobs (job_type 'classifier')",
                param="classifier_targets",
            )
        return
    names = [t.name for t in targets]
    if len(set(names)) != len(names):
        raise InvalidJob("classifier_targets names a target twice", param="classifier_targets")
    for target in targets:
        if len(set(target.labels)) != len(target.labels):
            raise InvalidJob(
                f"target {target.name!r} names a label twice", param="classifier_targets"
            )
        if len(target.labels) < 2:
            raise InvalidJob(
                f"target {target.name!r} needs at least two labels", param="classifier_targets"
            )


def check_inferred_targets(targets: list[dict[str, Any]]) -> None:
    """The targets read from the data of a job given none: each needs two labels at least."""
    if not targets:
        raise InvalidJob(
            "classifier jobs need classifier_targets (a name and its labels for each), or "
            "training data whose lines label them",
            param="classifier_targets",
        )
    for target in targets:
        if len(target["labels"]) < 2:
            raise InvalidJob(
                f"target {target['name']!r} has a single label in the data "
                f"({target['labels'][0]!r}): a classifier needs two at least",
                param="classifier_targets",
            )


def targets_out(body: JobIn) -> list[dict[str, Any]]:
    """The ClassifierTargetOut of each target (single_class when no loss function is given)."""
    return [
        {
            "name": t.name,
            "labels": list(t.labels),
            "weight": t.weight,
            "loss_function": t.loss_function or "single_class",
        }
        for t in body.classifier_targets or []
    ]


async def base_model(
    session: AsyncSession, tenant: Tenant, registry: EngineRegistry, name: str, job_type: str
) -> ModelSpec:
    """The catalog model a job of `job_type` trains: 404 if there is none of that name, 400 if
    it cannot be trained here (not fine-tunable, lacks the job type's capability, is served by
    an upstream, or is itself a fine-tuned model)."""
    resolved = registry.resolve(name)
    if resolved is None:
        tuned = name.startswith("ft:") or (
            await FineTunedModelRepository(session, tenant).get(name) is not None
        )
        if tuned:
            raise NotFineTunable(
                f"model {name!r} is a fine-tuned model: fine-tune its base model instead",
                param="model",
            )
        raise ModelNotFound(f"model {name!r} not found", param="model")
    spec = resolved.spec
    if not spec.has("fine_tuning"):
        raise NotFineTunable(
            f"model {name!r} cannot be fine-tuned (it lacks the fine_tuning capability)",
            param="model",
        )
    if not any(spec.has(capability) for capability in NEEDS[job_type]):
        raise NotFineTunable(
            f"model {name!r} cannot be the base of a {job_type} job (it lacks the "
            f"{' or '.join(NEEDS[job_type])} capability)",
            param="model",
        )
    if spec.engine.startswith("openai_compat"):
        raise NotFineTunable(
            f"model {name!r} is served by an upstream server: there is no training upstream",
            code="no_training_upstream",
            param="model",
        )
    return spec


def check_seq_len(spec: ModelSpec, seq_len: int | None) -> None:
    if seq_len is not None and seq_len > spec.max_context_length:
        raise InvalidJob(
            f"hyperparameters.seq_len {seq_len} is longer than the context of model "
            f"{spec.id!r} ({spec.max_context_length} tokens)",
            param="hyperparameters.seq_len",
        )


def hyperparameters(body: JobIn, job_type: str, spec: ModelSpec, plan: Plan) -> dict[str, Any]:
    """The hyperparameters the trainer uses: defaults filled in, `training_steps` always set,
    `epochs` when they were given or implied by default (not when steps were given)."""
    hyper = body.hyperparameters
    default_rate = spec.training.learning_rate if spec.training else DEFAULT_LEARNING_RATE
    out: dict[str, Any] = {
        "training_steps": plan.training_steps,
        "learning_rate": hyper.learning_rate or default_rate,
        "weight_decay": DEFAULT_WEIGHT_DECAY if hyper.weight_decay is None else hyper.weight_decay,
        "warmup_fraction": (
            DEFAULT_WARMUP_FRACTION if hyper.warmup_fraction is None else hyper.warmup_fraction
        ),
        "epochs": None if hyper.training_steps is not None else plan.epochs,
        "seq_len": hyper.seq_len or min(DEFAULT_SEQ_LEN[job_type], spec.max_context_length),
    }
    if job_type == "completion":
        out["fim_ratio"] = 0.0
    return out


def notices(asked: str, spec: ModelSpec, hyper: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """What a job's creator should know, by event name: `base-model` when the model asked for is
    another name of the base trained here (the platform's `open-mistral-7b` trains the small
    local model), `hyperparameters-warning` when the learning rate or the steps are below what
    the base needs to learn anything (the platform's advice, 10 steps at 1e-4, is for its large
    models). Each has a `message`; the job is created as asked all the same."""
    out: dict[str, dict[str, Any]] = {}
    if asked != spec.id:
        out["base-model"] = {
            "message": f"model {asked!r} is a name of {spec.id!r} here"
            + (f" ({spec.name})" if spec.name else "")
            + f": the job trains {spec.id!r}, and the fine-tuned model is named after it",
            "model": asked,
            "base_model": spec.id,
        }
    advice = spec.training
    if advice is None:
        return out
    rate, steps = float(hyper["learning_rate"]), int(hyper["training_steps"])
    low = []
    if rate < advice.min_learning_rate:
        low.append(f"learning_rate {rate:g} (below {advice.min_learning_rate:g})")
    if steps < advice.min_training_steps:
        low.append(f"{steps} training steps (below {advice.min_training_steps})")
    if low:
        out["hyperparameters-warning"] = {
            "message": f"{' and '.join(low)} will teach {spec.id!r} little: it is a small "
            f"model trained with LoRA, which needs a learning_rate of about "
            f"{advice.learning_rate:g} (the default here) and {advice.min_training_steps} "
            "training steps or more (or leave training_steps out: 3 epochs by default)",
            "learning_rate": rate,
            "training_steps": steps,
            "advised_learning_rate": advice.learning_rate,
            "advised_min_training_steps": advice.min_training_steps,
        }
    return out
