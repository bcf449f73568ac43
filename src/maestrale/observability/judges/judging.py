"""Live judging: a judge asks its model, as a chat completion request (so the call is accounted and
recorded as an event), for `{analysis, answer}` under a JSON schema built from its output; the
answer is checked (an option value, or a number within [min, max]) and an invalid answer is
retried, then a 502 that says why. Callers hold no transaction while a judge runs."""

from __future__ import annotations

import json
import uuid
from typing import Any

from pydantic import ValidationError

from maestrale.core.errors import NotFound
from maestrale.gateway.hooks import Caller
from maestrale.gateway.platform_calls import PlatformCalls
from maestrale.observability.errors import ObservabilityError
from maestrale.observability.judges.schemas import (
    ClassificationOutput,
    JudgeDefinition,
    JudgeOutput,
    RegressionOutput,
)

ATTEMPTS = 3


def output_schema(output: ClassificationOutput | RegressionOutput) -> dict[str, Any]:
    if isinstance(output, ClassificationOutput):
        answer: dict[str, Any] = {"type": "string", "enum": [o.value for o in output.options]}
    else:
        answer = {"type": "number", "minimum": output.min, "maximum": output.max}
    return {
        "type": "object",
        "properties": {"analysis": {"type": "string"}, "answer": answer},
        "required": ["analysis", "answer"],
        "additionalProperties": False,
    }


def _system_prompt(judge: JudgeDefinition) -> str:
    out = judge.output
    if isinstance(out, ClassificationOutput):
        scale = "Answer with one of these values:\n" + "\n".join(
            f"- {o.value}: {o.description}" for o in out.options
        )
    else:
        scale = (
            f"Answer with a number from {out.min} ({out.min_description}) "
            f"to {out.max} ({out.max_description})."
        )
    return (
        "You are a judge evaluating a conversation.\n"
        f"{judge.instructions}\n\n{scale}\n"
        'Reply with a JSON object: {"analysis": your reasoning, "answer": your answer}.'
    )


def check_answer(content: Any, output: ClassificationOutput | RegressionOutput) -> JudgeOutput:
    """The model's reply as a JudgeOutput, or ValueError saying what is wrong with it."""
    if not isinstance(content, str):
        raise ValueError("the reply has no text content")
    try:
        data = json.loads(content)
    except json.JSONDecodeError as exc:
        raise ValueError(f"the reply is not JSON ({exc.msg})") from exc
    if not isinstance(data, dict) or not isinstance(data.get("analysis"), str):
        raise ValueError("the reply has no string 'analysis'")
    answer = data.get("answer")
    if isinstance(output, ClassificationOutput):
        values = [o.value for o in output.options]
        if answer not in values:
            raise ValueError(f"answer {answer!r} is not one of {values}")
        return JudgeOutput(analysis=data["analysis"], answer=str(answer))
    if isinstance(answer, bool) or not isinstance(answer, int | float):
        raise ValueError(f"answer {answer!r} is not a number")
    if not output.min <= answer <= output.max:
        raise ValueError(f"answer {answer} is outside [{output.min}, {output.max}]")
    return JudgeOutput(analysis=data["analysis"], answer=float(answer))


def render_conversation(messages: list[dict[str, Any]], properties: dict[str, Any] | None) -> str:
    text = "Conversation to judge:\n" + json.dumps(messages, ensure_ascii=False, indent=1)
    if properties:
        text += "\n\nProperties:\n" + json.dumps(properties, ensure_ascii=False, indent=1)
    return text


def _unformattable(exc: ValueError) -> ObservabilityError:
    return ObservabilityError(
        f"the judge cannot build its request: {exc}", "JUDGE_CONVERSATION_FORMAT_ERROR"
    )


async def run_judge(
    calls: PlatformCalls,
    caller: Caller,
    judge: JudgeDefinition,
    messages: list[dict[str, Any]],
    properties: dict[str, Any] | None = None,
) -> JudgeOutput:
    try:
        body = {
            "model": judge.model_name,
            "messages": [
                {"role": "system", "content": _system_prompt(judge)},
                {"role": "user", "content": render_conversation(messages, properties)},
            ],
            "temperature": 0,
            "response_format": {
                "type": "json_schema",
                "json_schema": {
                    "name": "judge_output",
                    "schema": output_schema(judge.output),
                    "strict": True,
                },
            },
        }
    except ValueError as exc:
        raise _unformattable(exc) from exc
    correlation = f"judge-{uuid.uuid4()}"
    reasons = []
    for _ in range(ATTEMPTS):
        try:
            result = await calls.chat(caller, body, correlation_id=correlation, source="judge")
        except ValidationError as exc:
            raise _unformattable(exc) from exc
        except NotFound as exc:
            raise ObservabilityError(
                f"model_name {judge.model_name!r}: {exc.message}", "VALIDATION_ERROR"
            ) from exc
        content = result["choices"][0]["message"].get("content")
        try:
            return check_answer(content, judge.output)
        except ValueError as exc:
            reasons.append(str(exc))
    raise ObservabilityError(
        f"model {judge.model_name!r} gave no valid judge answer in {ATTEMPTS} attempts: "
        + "; ".join(reasons),
        "JUDGE_MISTRAL_API_ERROR",
        status_code=502,
    )
