"""How the official worker (`mistralai-workflows`) ties its telemetry to an execution and to a
deployment, as read in its source (`core/tracing/_otel_config.py`, `core/tracing/utils.py`):

- every span it makes in a workflow or an activity carries `wf.workflow.execution_id` (and the
  same value as `temporalWorkflowID`), `temporalRunID` and, in an activity,
  `wf.activity.execution_id`; a child workflow's spans share its root's trace;
- every log record its OTLP handler exports carries the Python record's extras as attributes:
  `workflowExecutionID`, `workflowRunID`, `workflowName`, `temporalActivityID` (in an activity),
  `rootWorkflowExecutionID`, `parentWorkflowExecutionID`, and on every record, in or out of a
  workflow, `deploymentName` and `workerName`;
- the resource's `service.name` is `mistral-workflows-worker` for every deployment, so the
  deployment is told by the `deploymentName` log attribute alone.
"""

from __future__ import annotations

from datetime import timedelta

# Stored in columns of their own at ingestion (telemetry_spans/logs.execution_id,
# telemetry_logs.deployment_name); the other keys are read from the attributes.
from maestrale.telemetry.otlp.genai import LOG_DEPLOYMENT, LOG_EXECUTION, SPAN_EXECUTION

__all__ = ["LOG_DEPLOYMENT", "LOG_EXECUTION", "SPAN_EXECUTION"]

LOG_RUN = "workflowRunID"
LOG_ACTIVITY = "temporalActivityID"
LOG_WORKFLOW = "workflowName"
LOG_WORKER = "workerName"

# Event attributes of the worker's custom events (`models/attributes.py` EventAttributes).
EVENT_TYPE = "wf.type"
EVENT_ID = "wf.id"
EVENT_INTERNAL = "wf.internal"
PROGRESS_STATUS = "wf.progress.status"
PROGRESS_START_MS = "wf.progress.start_time_unix_ms"
PROGRESS_END_MS = "wf.progress.end_time_unix_ms"
PROGRESS_ERROR = "wf.progress.error"

# Telemetry of an execution (of a deployment) is looked for from this long before it started
# (was created): worker clocks drift, and the bound keeps the scan on the (workspace, time)
# index rather than the workspace's whole history.
CLOCK_SLACK = timedelta(hours=1)
