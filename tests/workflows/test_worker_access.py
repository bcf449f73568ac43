"""Which Temporal calls a worker key may make through the proxy (`temporal.access.Rules`): each
kind of call, parsed from the bytes the proxy receives, against the grant of workspace A."""

from __future__ import annotations

import pytest
from google.protobuf.message import Message
from temporalio.api.command.v1 import (
    Command,
    ScheduleNexusOperationCommandAttributes,
    SignalExternalWorkflowExecutionCommandAttributes,
    StartChildWorkflowExecutionCommandAttributes,
)
from temporalio.api.common.v1 import Callback, Link, WorkflowExecution
from temporalio.api.enums.v1 import CommandType
from temporalio.api.operatorservice.v1 import (
    AddSearchAttributesRequest,
    ListSearchAttributesRequest,
)
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import (
    DescribeNamespaceRequest,
    ExecuteMultiOperationRequest,
    GetClusterInfoRequest,
    GetSystemInfoRequest,
    ListNamespacesRequest,
    ListWorkflowExecutionsRequest,
    PollActivityTaskQueueRequest,
    PollWorkflowTaskQueueRequest,
    RecordActivityTaskHeartbeatRequest,
    RegisterNamespaceRequest,
    RespondActivityTaskCompletedRequest,
    RespondWorkflowTaskCompletedRequest,
    SignalWorkflowExecutionRequest,
    StartWorkflowExecutionRequest,
    TerminateWorkflowExecutionRequest,
    UpdateNamespaceRequest,
)

from maestrale.workflows.temporal.access import AccessRefused, Grant, Rules

WS = "temporal.api.workflowservice.v1.WorkflowService"
OPS = "temporal.api.operatorservice.v1.OperatorService"
A = Grant(namespace="mw-a", namespace_id="11111111-1111-4111-8111-111111111111")
B_NAMESPACE, B_ID = "mw-b", "22222222-2222-4222-8222-222222222222"


@pytest.fixture(scope="module")
def rules() -> Rules:
    return Rules()


def token(namespace_id: str, workflow_id: str = "wf") -> bytes:
    """A task token as the server mints it: namespace_id (1), workflow_id (2), ..."""
    ns, wf = namespace_id.encode(), workflow_id.encode()
    return b"\x0a" + bytes([len(ns)]) + ns + b"\x12" + bytes([len(wf)]) + wf + b"\x20\x05"


def allowed(rules: Rules, method: str, request: Message | bytes) -> bool:
    raw = request if isinstance(request, bytes) else request.SerializeToString()
    try:
        rules.check(method, raw, A)
    except AccessRefused:
        return False
    return True


def queue(name: str = "svc") -> TaskQueue:
    return TaskQueue(name=name)


def completed(*commands: Command, ns: str = "mw-a", tok: bytes | None = None) -> Message:
    return RespondWorkflowTaskCompletedRequest(
        namespace=ns, task_token=tok or token(A.namespace_id), commands=list(commands)
    )


CASES: list[tuple[str, str, Message | bytes, bool]] = [
    ("system info", f"/{WS}/GetSystemInfo", GetSystemInfoRequest(), True),
    ("health", "/grpc.health.v1.Health/Check", b"", True),
    ("cluster info", f"/{WS}/GetClusterInfo", GetClusterInfoRequest(), False),
    ("list namespaces", f"/{WS}/ListNamespaces", ListNamespacesRequest(), False),
    ("register own", f"/{WS}/RegisterNamespace", RegisterNamespaceRequest(namespace="mw-a"), False),
    ("update own", f"/{WS}/UpdateNamespace", UpdateNamespaceRequest(namespace="mw-a"), False),
    ("describe own", f"/{WS}/DescribeNamespace", DescribeNamespaceRequest(namespace="mw-a"), True),
    ("describe B", f"/{WS}/DescribeNamespace",
     DescribeNamespaceRequest(namespace=B_NAMESPACE), False),
    ("describe B by id", f"/{WS}/DescribeNamespace", DescribeNamespaceRequest(id=B_ID), False),
    ("describe own + B id", f"/{WS}/DescribeNamespace",
     DescribeNamespaceRequest(namespace="mw-a", id=B_ID), False),
    ("search attributes own", f"/{OPS}/ListSearchAttributes",
     ListSearchAttributesRequest(namespace="mw-a"), True),
    ("search attributes B", f"/{OPS}/ListSearchAttributes",
     ListSearchAttributesRequest(namespace=B_NAMESPACE), False),
    ("add search attribute", f"/{OPS}/AddSearchAttributes",
     AddSearchAttributesRequest(namespace="mw-a"), False),
    ("poll own", f"/{WS}/PollWorkflowTaskQueue",
     PollWorkflowTaskQueueRequest(namespace="mw-a", task_queue=queue()), True),
    ("poll B", f"/{WS}/PollWorkflowTaskQueue",
     PollWorkflowTaskQueueRequest(namespace=B_NAMESPACE, task_queue=queue()), False),
    ("poll, no namespace", f"/{WS}/PollActivityTaskQueue",
     PollActivityTaskQueueRequest(task_queue=queue()), False),
    ("list own", f"/{WS}/ListWorkflowExecutions",
     ListWorkflowExecutionsRequest(namespace="mw-a"), True),
    ("list B", f"/{WS}/ListWorkflowExecutions",
     ListWorkflowExecutionsRequest(namespace=B_NAMESPACE), False),
    ("start own", f"/{WS}/StartWorkflowExecution",
     StartWorkflowExecutionRequest(namespace="mw-a", workflow_id="x", task_queue=queue()), True),
    ("start B", f"/{WS}/StartWorkflowExecution",
     StartWorkflowExecutionRequest(namespace=B_NAMESPACE, workflow_id="x"), False),
    ("start own, callback", f"/{WS}/StartWorkflowExecution",
     StartWorkflowExecutionRequest(namespace="mw-a", completion_callbacks=[
         Callback(nexus=Callback.Nexus(url="http://169.254.169.254/"))]), False),
    ("start own, link to B", f"/{WS}/StartWorkflowExecution",
     StartWorkflowExecutionRequest(namespace="mw-a", links=[
         Link(workflow_event=Link.WorkflowEvent(namespace=B_NAMESPACE, workflow_id="v"))]),
     False),
    ("signal B", f"/{WS}/SignalWorkflowExecution",
     SignalWorkflowExecutionRequest(namespace=B_NAMESPACE,
                                    workflow_execution=WorkflowExecution(workflow_id="v")), False),
    ("terminate B", f"/{WS}/TerminateWorkflowExecution",
     TerminateWorkflowExecutionRequest(namespace=B_NAMESPACE), False),
    ("multi-operation, inner B", f"/{WS}/ExecuteMultiOperation", ExecuteMultiOperationRequest(
        namespace="mw-a", operations=[ExecuteMultiOperationRequest.Operation(
            start_workflow=StartWorkflowExecutionRequest(namespace=B_NAMESPACE))]), False),
    ("complete activity, own token", f"/{WS}/RespondActivityTaskCompleted",
     RespondActivityTaskCompletedRequest(namespace="mw-a", task_token=token(A.namespace_id)),
     True),
    ("complete activity, B's token", f"/{WS}/RespondActivityTaskCompleted",
     RespondActivityTaskCompletedRequest(namespace="mw-a", task_token=token(B_ID)), False),
    ("complete activity, garbage token", f"/{WS}/RespondActivityTaskCompleted",
     RespondActivityTaskCompletedRequest(namespace="mw-a", task_token=b"\xff\xff\xff"), False),
    ("heartbeat, B's token", f"/{WS}/RecordActivityTaskHeartbeat",
     RecordActivityTaskHeartbeatRequest(namespace="mw-a", task_token=token(B_ID)), False),
    ("workflow task, own child", f"/{WS}/RespondWorkflowTaskCompleted", completed(Command(
        command_type=CommandType.COMMAND_TYPE_START_CHILD_WORKFLOW_EXECUTION,
        start_child_workflow_execution_command_attributes=(
            StartChildWorkflowExecutionCommandAttributes(namespace="mw-a", workflow_id="c")))),
     True),
    ("workflow task, child in B", f"/{WS}/RespondWorkflowTaskCompleted", completed(Command(
        command_type=CommandType.COMMAND_TYPE_START_CHILD_WORKFLOW_EXECUTION,
        start_child_workflow_execution_command_attributes=(
            StartChildWorkflowExecutionCommandAttributes(namespace=B_NAMESPACE)))), False),
    ("workflow task, signal into B", f"/{WS}/RespondWorkflowTaskCompleted", completed(Command(
        command_type=CommandType.COMMAND_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION,
        signal_external_workflow_execution_command_attributes=(
            SignalExternalWorkflowExecutionCommandAttributes(namespace=B_NAMESPACE)))), False),
    ("workflow task, nexus", f"/{WS}/RespondWorkflowTaskCompleted", completed(Command(
        command_type=CommandType.COMMAND_TYPE_SCHEDULE_NEXUS_OPERATION,
        schedule_nexus_operation_command_attributes=(
            ScheduleNexusOperationCommandAttributes(endpoint="anywhere")))), False),
    ("workflow task, B's token", f"/{WS}/RespondWorkflowTaskCompleted",
     completed(tok=token(B_ID)), False),
    ("unknown method", f"/{WS}/NoSuchCall", b"", False),
    ("another service", "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo", b"",
     False),
    ("unparsable", f"/{WS}/PollWorkflowTaskQueue", b"\x0a\xff", False),
    # A field given twice: the server keeps the last one, and so does the check.
    ("namespace given twice", f"/{WS}/PollWorkflowTaskQueue",
     PollWorkflowTaskQueueRequest(namespace="mw-a").SerializeToString()
     + PollWorkflowTaskQueueRequest(namespace=B_NAMESPACE).SerializeToString(), False),
]  # fmt: skip


@pytest.mark.parametrize(
    ("method", "request_", "expected"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_each_call_is_judged(
    rules: Rules, method: str, request_: Message | bytes, expected: bool
) -> None:
    assert allowed(rules, method, request_) is expected
