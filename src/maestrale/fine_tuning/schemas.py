"""Wire models of the fine-tuning jobs group, as `mistralai==1.12.4` sends and parses them
(JobIn, CompletionJobOut, ClassifierJobOut, their detailed kinds, LegacyJobMetadataOut, JobsOut).
Unknown request fields are ignored; ranges are checked here (422), rules across fields in the
service (400)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from maestrale.core.clock import unix
from maestrale.fine_tuning.tables import FineTuningCheckpoint, FineTuningEvent, FineTuningJob

JobType = Literal["completion", "classifier"]
LossFunction = Literal["single_class", "multi_class"]
MAX_FILES = 100
MAX_TARGETS = 50
MAX_LABELS = 1000


def _no_nul(value: str) -> str:
    if "\x00" in value:
        raise ValueError("must not contain NUL characters")
    return value


# Text kept in a row or used in a query: no NUL (Postgres cannot store or compare it).
Name = Annotated[str, Field(min_length=1, max_length=200), AfterValidator(_no_nul)]


class TrainingFileIn(BaseModel):
    model_config = ConfigDict(extra="ignore")

    file_id: Name
    weight: float = Field(default=1.0, ge=0, le=1000)


class ClassifierTargetIn(BaseModel):
    model_config = ConfigDict(extra="ignore")

    name: Name
    labels: list[Name] = Field(min_length=1, max_length=MAX_LABELS)
    weight: float = Field(default=1.0, ge=0, le=1000)
    loss_function: LossFunction | None = None


class TrainingParametersIn(BaseModel):
    """Both kinds of the reference's `Hyperparameters` (fim_ratio is the completion's only)."""

    model_config = ConfigDict(extra="ignore")

    training_steps: int | None = Field(default=None, ge=1, le=100_000)
    learning_rate: float | None = Field(default=None, gt=0, le=1)
    weight_decay: float | None = Field(default=None, ge=0, le=1)
    warmup_fraction: float | None = Field(default=None, ge=0, le=1)
    epochs: float | None = Field(default=None, gt=0, le=1000)
    seq_len: int | None = Field(default=None, ge=16, le=32768)
    fim_ratio: float | None = Field(default=None, ge=0, le=1)


class JobIn(BaseModel):
    model_config = ConfigDict(extra="ignore")

    model: Name
    hyperparameters: TrainingParametersIn = Field(default_factory=TrainingParametersIn)
    training_files: list[TrainingFileIn] = Field(default_factory=list, max_length=MAX_FILES)
    validation_files: list[Name] | None = Field(default=None, max_length=MAX_FILES)
    # Checked in the service (a 400 naming the rule); bounded here.
    suffix: str | None = Field(default=None, max_length=1000)
    integrations: list[Any] | None = None
    auto_start: bool | None = None
    invalid_sample_skip_percentage: float = Field(default=0.0, ge=0, le=100)
    job_type: JobType | None = None
    repositories: list[Any] | None = None
    classifier_targets: list[ClassifierTargetIn] | None = Field(
        default=None, max_length=MAX_TARGETS
    )
    # Not in the SDK's JobIn: raw HTTP callers send it here or as `?dry_run=true`.
    dry_run: bool | None = None


class ClassifierTrainingParameters(BaseModel):
    training_steps: int | None = None
    learning_rate: float = 0.0001
    weight_decay: float | None = None
    warmup_fraction: float | None = None
    epochs: float | None = None
    seq_len: int | None = None


class CompletionTrainingParameters(ClassifierTrainingParameters):
    fim_ratio: float | None = None


class JobMetadataOut(BaseModel):
    expected_duration_seconds: int | None = None
    cost: float | None = None
    cost_currency: str | None = None
    train_tokens_per_step: int | None = None
    train_tokens: int | None = None
    data_tokens: int | None = None
    estimated_start_time: int | None = None


class DryRunOut(JobMetadataOut):
    """LegacyJobMetadataOut, with the `job_type` without which SDK 1.12.4 cannot parse it."""

    object: Literal["job.metadata"] = "job.metadata"
    details: str = ""
    deprecated: bool = True
    epochs: float | None = None
    training_steps: int | None = None
    job_type: JobType


class ClassifierTargetOut(BaseModel):
    name: str
    labels: list[str]
    weight: float
    loss_function: LossFunction


class MetricOut(BaseModel):
    train_loss: float | None = None
    valid_loss: float | None = None
    valid_mean_token_accuracy: float | None = None


class CheckpointOut(BaseModel):
    metrics: MetricOut
    step_number: int
    created_at: int

    @classmethod
    def of(cls, row: FineTuningCheckpoint) -> CheckpointOut:
        metrics = MetricOut(
            train_loss=row.train_loss,
            valid_loss=row.valid_loss,
            valid_mean_token_accuracy=row.valid_mean_token_accuracy,
        )
        return cls(metrics=metrics, step_number=row.step_number, created_at=unix(row.created_at))


class EventOut(BaseModel):
    name: str
    created_at: int
    data: dict[str, Any] | None = None

    @classmethod
    def of(cls, row: FineTuningEvent) -> EventOut:
        return cls(name=row.name, created_at=unix(row.created_at), data=row.data)


class _JobFields(BaseModel):
    id: str
    object: Literal["job"] = "job"
    auto_start: bool
    model: str
    status: str
    created_at: int
    modified_at: int
    training_files: list[str]
    validation_files: list[str] | None
    fine_tuned_model: str | None
    suffix: str | None
    integrations: list[dict[str, Any]]
    trained_tokens: int | None
    metadata: JobMetadataOut | None


class CompletionJobOut(_JobFields):
    job_type: Literal["completion"] = "completion"
    hyperparameters: CompletionTrainingParameters
    repositories: list[dict[str, Any]] = Field(default_factory=list)


class ClassifierJobOut(_JobFields):
    job_type: Literal["classifier"] = "classifier"
    hyperparameters: ClassifierTrainingParameters


class CompletionDetailedJobOut(CompletionJobOut):
    events: list[EventOut]
    checkpoints: list[CheckpointOut]


class ClassifierDetailedJobOut(ClassifierJobOut):
    classifier_targets: list[ClassifierTargetOut]
    events: list[EventOut]
    checkpoints: list[CheckpointOut]


JobOut = Annotated[CompletionJobOut | ClassifierJobOut, Field(discriminator="job_type")]
DetailedJobOut = Annotated[
    CompletionDetailedJobOut | ClassifierDetailedJobOut, Field(discriminator="job_type")
]
CreatedJobOut = DryRunOut | CompletionJobOut | ClassifierJobOut


class JobsOut(BaseModel):
    object: Literal["list"] = "list"
    data: list[JobOut]
    total: int


def _fields(row: FineTuningJob) -> dict[str, Any]:
    return {
        "id": row.id,
        "auto_start": row.auto_start,
        "model": row.model,
        "status": row.status,
        "created_at": unix(row.created_at),
        "modified_at": unix(row.modified_at),
        "training_files": [f["file_id"] for f in row.training_files or []],
        "validation_files": list(row.validation_files or []),
        "fine_tuned_model": row.fine_tuned_model,
        "suffix": row.suffix,
        "integrations": list(row.integrations or []),
        "trained_tokens": row.trained_tokens,
        "metadata": JobMetadataOut.model_validate(row.meta or {}),
    }


def job_out(row: FineTuningJob) -> CompletionJobOut | ClassifierJobOut:
    """The job as lists and creation show it."""
    hyper = row.hyperparameters or {}
    if row.job_type == "classifier":
        return ClassifierJobOut(
            **_fields(row), hyperparameters=ClassifierTrainingParameters.model_validate(hyper)
        )
    return CompletionJobOut(
        **_fields(row), hyperparameters=CompletionTrainingParameters.model_validate(hyper)
    )


def detailed_out(
    row: FineTuningJob,
    events: list[FineTuningEvent],
    checkpoints: list[FineTuningCheckpoint],
) -> CompletionDetailedJobOut | ClassifierDetailedJobOut:
    """The job with its events (oldest first) and checkpoints (by step)."""
    shown = job_out(row).model_dump()
    extra: dict[str, Any] = {
        "events": [EventOut.of(e) for e in events],
        "checkpoints": [CheckpointOut.of(c) for c in checkpoints],
    }
    if row.job_type == "classifier":
        targets = [ClassifierTargetOut.model_validate(t) for t in row.classifier_targets or []]
        return ClassifierDetailedJobOut(**shown, **extra, classifier_targets=targets)
    return CompletionDetailedJobOut(**shown, **extra)
