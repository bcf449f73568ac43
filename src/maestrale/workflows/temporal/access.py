"""Which Temporal calls a worker's key may make: the authorization half of the worker proxy.

A workspace owns one namespace (`namespaces.workspace_namespace`). A call passes when it is a
call of the namespace's own (its request names that namespace, and everything inside it that
names a namespace names the same one or none), or one of the few calls about the server itself
that the SDKs make on connecting. Everything else is refused: calls about other namespaces or
about namespaces in general (list, register, update), the operator service (but listing the
namespace's own search attributes), task tokens minted for another namespace, and workflow task
commands that would reach past the namespace (child workflows, signals and cancels of another
namespace, Nexus operations, completion callbacks).

Requests are parsed with the `temporalio.api` protos of the method being called, so a field
given twice means what it means to the server (the last one wins).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import DecodeError, Message
from google.protobuf.message_factory import GetMessageClass

WORKFLOW_SERVICE = "temporal.api.workflowservice.v1.WorkflowService"
OPERATOR_SERVICE = "temporal.api.operatorservice.v1.OperatorService"
HEALTH_CHECK = "/grpc.health.v1.Health/Check"

# Calls about the server, not a namespace, that the SDKs make on connecting.
SERVER_CALLS = frozenset({f"/{WORKFLOW_SERVICE}/GetSystemInfo", HEALTH_CHECK})
# Calls that name a namespace but act on namespaces themselves.
NAMESPACE_ADMIN = frozenset(
    f"/{WORKFLOW_SERVICE}/{name}"
    for name in ("RegisterNamespace", "UpdateNamespace", "DeprecateNamespace", "ListNamespaces")
)
OPERATOR_READS = frozenset({f"/{OPERATOR_SERVICE}/ListSearchAttributes"})

# Fields that would reach outside the namespace whatever namespace they name: a Nexus operation
# goes to an endpoint's namespace, a completion callback to a URL the server calls.
_OUTWARD = frozenset({"schedule_nexus_operation_command_attributes", "completion_callbacks"})
_CHECKED = frozenset({"namespace", "task_token"}) | _OUTWARD


class AccessRefused(Exception):
    """A call the key may not make; `why` is safe to send back."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


@dataclass(frozen=True, slots=True)
class Grant:
    """What a key may reach: its workspace's namespace, by name and by id."""

    namespace: str
    namespace_id: str


def _token_namespace_id(token: bytes) -> str | None:
    """The namespace id a task token was minted for: field 1 (`namespace_id`) of the server's
    token messages (activity, workflow, query and Nexus tokens alike); None if unreadable."""
    found: str | None = None
    i, n = 0, len(token)
    try:
        while i < n:
            key, i = _varint(token, i)
            number, kind = key >> 3, key & 7
            if kind == 0:
                _, i = _varint(token, i)
            elif kind == 1:
                i += 8
            elif kind == 5:
                i += 4
            elif kind == 2:
                size, i = _varint(token, i)
                if number == 1:
                    found = token[i : i + size].decode()
                i += size
            else:
                return None
            if i > n:
                return None
    except (IndexError, UnicodeDecodeError):
        return None
    return found


def _varint(data: bytes, i: int) -> tuple[int, int]:
    value, shift = 0, 0
    while True:
        byte = data[i]
        i += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, i
        shift += 7
        if shift > 63:
            raise IndexError("varint too long")


@dataclass
class Rules:
    """The request type of every method, and which message types can hold a checked field."""

    _inputs: dict[str, Any] = field(default_factory=dict)
    _reach: dict[str, bool] = field(default_factory=dict)

    def __post_init__(self) -> None:
        from temporalio.api.operatorservice.v1 import service_pb2 as operator
        from temporalio.api.workflowservice.v1 import service_pb2 as workflow

        for module, name in ((workflow, "WorkflowService"), (operator, "OperatorService")):
            service = module.DESCRIPTOR.services_by_name[name]
            for method in service.methods:
                path = f"/{service.full_name}/{method.name}"
                self._inputs[path] = GetMessageClass(method.input_type)

    def check(self, method: str, request: bytes, grant: Grant) -> None:
        """AccessRefused unless `grant` allows calling `method` with `request` (serialized)."""
        if method in SERVER_CALLS:
            return
        if method in NAMESPACE_ADMIN:
            raise AccessRefused("a worker key cannot manage namespaces")
        if method.startswith(f"/{OPERATOR_SERVICE}/") and method not in OPERATOR_READS:
            raise AccessRefused("a worker key cannot use the operator service")
        message_type = self._inputs.get(method)
        if message_type is None:
            raise AccessRefused(f"{method} is not open to worker keys")
        if "namespace" not in message_type.DESCRIPTOR.fields_by_name:
            raise AccessRefused(f"{method} is not about a namespace: not open to worker keys")
        try:
            message = message_type.FromString(request)
        except DecodeError as exc:
            raise AccessRefused("the request could not be parsed") from exc
        if message.namespace != grant.namespace:
            raise AccessRefused(f"this key may only call namespace {grant.namespace!r}")
        if method.endswith("/DescribeNamespace") and message.id not in ("", grant.namespace_id):
            raise AccessRefused(f"this key may only call namespace {grant.namespace!r}")
        self._walk(message, grant)

    def _walk(self, message: Message, grant: Grant) -> None:
        for descriptor, value in message.ListFields():
            name = descriptor.name
            if name in _OUTWARD:
                raise AccessRefused(f"{name} is not open to worker keys")
            if name == "namespace" and descriptor.type == FieldDescriptor.TYPE_STRING:
                if value not in ("", grant.namespace):
                    raise AccessRefused(f"this key may only reach namespace {grant.namespace!r}")
            elif name == "task_token" and descriptor.type == FieldDescriptor.TYPE_BYTES:
                if value and _token_namespace_id(value) != grant.namespace_id:
                    raise AccessRefused("the task token belongs to another namespace")
            elif (
                descriptor.type == FieldDescriptor.TYPE_MESSAGE
                and descriptor.message_type is not None
                and self._reaches(descriptor.message_type)
            ):
                if _is_map(descriptor):
                    items = list(value.values())
                elif _repeated(descriptor):
                    items = list(value)
                else:
                    items = [value]
                for item in items:
                    if isinstance(item, Message):
                        self._walk(item, grant)

    def _reaches(self, descriptor: Descriptor) -> bool:
        """Whether a message of this type can hold a checked field at any depth (payloads,
        failures, headers and the like cannot, and are not walked)."""
        known = self._reach.get(descriptor.full_name)
        if known is None:
            known = False
            seen, stack = {descriptor.full_name}, [descriptor]
            while stack and not known:
                for sub in stack.pop().fields:
                    if sub.name in _CHECKED:
                        known = True
                        break
                    nested = sub.message_type
                    if nested is not None and nested.full_name not in seen:
                        seen.add(nested.full_name)
                        stack.append(nested)
            self._reach[descriptor.full_name] = known
        return known


def _repeated(descriptor: FieldDescriptor) -> bool:
    # `label` is deprecated in recent protobuf releases, which have `is_repeated` instead.
    flag = getattr(descriptor, "is_repeated", None)
    if flag is not None:
        return bool(flag)
    return bool(getattr(descriptor, "label", None) == FieldDescriptor.LABEL_REPEATED)


def _is_map(descriptor: FieldDescriptor) -> bool:
    message_type = descriptor.message_type
    return bool(
        _repeated(descriptor) and message_type is not None and message_type.GetOptions().map_entry
    )
