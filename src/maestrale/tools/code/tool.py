"""The `code_interpreter` tool: the model's Python run in a bubblewrap sandbox (see `bwrap.py`
and `runner.py`), its stdout, stderr and exit status read back, and the files it wrote in its
scratch directory stored as Files API files of the caller's workspace (`tool_file` chunks).

Each call is a fresh sandbox: nothing is kept from one call to the next. A run that hits a limit
is an error the model reads (with what the code printed); its files are not kept.
"""

from __future__ import annotations

import asyncio
import mimetypes
import os
import sys
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from maestrale.conversations.server_tools import ServerTool, ToolOutcome
from maestrale.core.errors import AppError
from maestrale.core.fair import FairShare, QueueTimeout, Share, current
from maestrale.tools.base import ToolContext
from maestrale.tools.code.bwrap import SandboxUnavailable, find_bwrap, probe
from maestrale.tools.code.python_runtime import RuntimeNotFound, find_runtime
from maestrale.tools.code.runner import ProducedFile, Sandbox, SandboxLimits, SandboxResult

if TYPE_CHECKING:
    from maestrale.config import Settings

CODE_INTERPRETER = "code_interpreter"
MAX_CODE_CHARS = 200_000
# A sandbox that could not be set up is checked again after this long (an operator may fix it).
RETRY_SECONDS = 30.0
DISABLED = "the code_interpreter tool is disabled (MAESTRALE_CODE_INTERPRETER_ENABLED=false)"


def _mib(size: int) -> str:
    return f"{size / (1 << 20):g} MiB" if size >= 1 << 20 else f"{size / 1024:g} KiB"


def describe_limit(limit: str, limits: SandboxLimits) -> str:
    """A limit the run hit, as the model reads it."""
    return {
        "wall_time": f"the wall-time limit ({limits.wall_seconds:g} s) was reached: the run "
        "was stopped",
        "cpu_time": f"the CPU-time limit ({limits.cpu_seconds} s) was reached: the process was "
        "killed",
        "memory": f"the memory limit ({_mib(limits.memory_bytes)}) was reached",
        "processes": f"the limit of {limits.processes} processes and threads was reached",
        "file_size": f"the file-size limit ({_mib(limits.file_bytes)}) was reached",
        "scratch_size": f"the scratch directory is full ({_mib(limits.scratch_bytes)})",
        "output": f"the output limit ({_mib(limits.output_bytes)} of stdout and stderr) was "
        "reached: the run was stopped",
    }.get(limit, limit)


@dataclass(frozen=True, slots=True)
class _Setup:
    """The sandbox found for some settings, or why there is none (and when that was seen)."""

    key: tuple[Any, ...]
    sandbox: Sandbox | None
    reason: str | None
    at: float


def _find(settings: Settings) -> Sandbox:
    bwrap = find_bwrap(settings.code_interpreter_bwrap, settings.code_interpreter_sandbox_uid)
    python = settings.code_interpreter_python or sys.executable
    runtime = find_runtime(python, site_packages=settings.code_interpreter_site_packages)
    probe(bwrap, runtime)
    return Sandbox(bwrap, runtime)


class CodeInterpreter:
    """The `code_interpreter` built-in tool."""

    type = CODE_INTERPRETER

    def __init__(self) -> None:
        self._setup: _Setup | None = None
        self._slots: FairShare | None = None

    @staticmethod
    def _key(settings: Settings) -> tuple[Any, ...]:
        return (
            settings.code_interpreter_bwrap,
            settings.code_interpreter_python,
            settings.code_interpreter_site_packages,
            settings.code_interpreter_sandbox_uid,
        )

    def sandbox(self, settings: Settings) -> Sandbox | str:
        """The sandbox of these settings (found and started once, then kept), or why this
        server cannot run one."""
        key = self._key(settings)
        setup = self._setup
        if setup is not None and setup.key == key:
            if setup.sandbox is not None:
                return setup.sandbox
            if time.monotonic() - setup.at < RETRY_SECONDS:
                return str(setup.reason)
        try:
            found: Sandbox | None = _find(settings)
            reason = None
        except (SandboxUnavailable, RuntimeNotFound) as exc:
            found, reason = None, str(exc)
        self._setup = _Setup(key, found, reason, time.monotonic())
        return found or str(reason)

    async def prepare(self, settings: Settings) -> str | None:
        """Find and check the sandbox ahead of the first request (finding the runtime and
        starting a sandbox once take a fraction of a second, which `unavailable` would
        otherwise spend on the event loop); why it cannot run, or None."""
        if not settings.code_interpreter_enabled:
            return DISABLED
        found = await asyncio.to_thread(self.sandbox, settings)
        return found if isinstance(found, str) else None

    def unavailable(self, settings: Settings) -> str | None:
        if not settings.code_interpreter_enabled:
            return DISABLED
        found = self.sandbox(settings)
        return found if isinstance(found, str) else None

    def offer(self, entry: dict[str, Any]) -> ServerTool:
        return ServerTool(
            name=self.type,
            description=(
                "Run Python 3 code in a sandbox and return its stdout, stderr and exit status. "
                "No network; the standard library"
                " and the installed scientific libraries (such as NumPy) are available; the "
                "working directory is an empty scratch directory, and the files the code writes "
                "there are returned as files. Each call starts afresh; print what you need."
            ),
            parameters={
                "type": "object",
                "properties": {
                    "code": {
                        "type": "string",
                        "description": "The Python code to run, as a script.",
                        "maxLength": MAX_CODE_CHARS,
                    },
                },
                "required": ["code"],
            },
            source={"tool": self.type},
        )

    def _fair_slots(self, settings: Settings) -> FairShare:
        """The run slots, shared fairly between workspaces: round-robin, interactive calls
        before batch work, at most `code_interpreter_concurrency_per_workspace` each."""
        size = settings.code_interpreter_concurrency
        per_key = settings.code_interpreter_concurrency_per_workspace
        slots = self._slots
        if slots is None or (slots.slots, slots.per_key) != (size, min(per_key, size)):
            slots = self._slots = FairShare(size, per_key=per_key)
        return slots

    async def run(self, context: ToolContext, arguments: dict[str, Any]) -> ToolOutcome:
        code = arguments.get("code")
        if not isinstance(code, str) or not code.strip():
            return failed("`code` must be a non-empty string")
        if len(code) > MAX_CODE_CHARS:
            return failed(f"`code` is longer than {MAX_CODE_CHARS} characters")
        settings = context.services.settings
        if not settings.code_interpreter_enabled:
            return failed(DISABLED)
        found = await asyncio.to_thread(self.sandbox, settings)
        if isinstance(found, str):
            return failed(f"the sandbox is unavailable: {found}", {"code": code})
        limits = SandboxLimits.of(settings)
        share = Share(context.tenant.workspace_id, current().priority)
        wait = settings.code_interpreter_queue_seconds
        try:
            async with self._fair_slots(settings).slot(share, timeout=wait):
                result = await found.run(code, limits)
        except QueueTimeout:
            return failed(
                f"the sandbox is busy: no run slot was free within {wait:g} s "
                "(MAESTRALE_CODE_INTERPRETER_QUEUE_SECONDS); try again later",
                {"code": code},
            )
        return await self.outcome(context, code, result, limits)

    async def outcome(
        self, context: ToolContext, code: str, result: SandboxResult, limits: SandboxLimits
    ) -> ToolOutcome:
        """What the model reads of a run, its files stored, and the entry's details."""
        info: dict[str, Any] = {
            "code": code,
            "stdout": result.stdout,
            "stderr": result.stderr,
            "exit_code": result.exit_code,
            "limit": result.limit,
            "limits": result.limits,
            "duration_ms": result.duration_ms,
            "cpu_seconds": result.cpu_seconds,
        }
        if result.failure is not None:
            return failed(f"the sandbox failed: {result.failure}\n{_text(result, [], [])}", info)
        if result.limits:
            hit = "; ".join(describe_limit(limit, limits) for limit in result.limits)
            kept = " (the files it wrote are not kept)" if result.files else ""
            return failed(f"{hit}{kept}\n{_text(result, [], [])}", info)
        chunks, stored, notes = await self._store(context, result.files)
        for skipped in result.skipped:
            why = "too many files" if skipped["reason"] == "count" else "over the size limit"
            notes.append(f"file {skipped['name']!r} not returned ({why})")
        info["files"] = stored
        return ToolOutcome(_text(result, notes, stored), info=info, files=chunks)

    async def _store(
        self, context: ToolContext, files: list[ProducedFile]
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[str]]:
        from maestrale.files.generated import save_generated_file

        chunks: list[dict[str, Any]] = []
        stored: list[dict[str, Any]] = []
        notes: list[str] = []
        for produced in files:
            mimetype = mimetypes.guess_type(produced.name)[0] or "application/octet-stream"
            try:
                file_id, file_name = await save_generated_file(
                    context.services.db,
                    context.services.blobs,
                    context.services.settings,
                    context.tenant,
                    filename=os.path.basename(produced.name),
                    data=produced.data,
                    mimetype=mimetype,
                )
            except AppError as exc:
                notes.append(f"file {produced.name!r} could not be stored: {exc.message}")
                continue
            extension = os.path.splitext(file_name)[1].lstrip(".").lower() or None
            chunks.append(
                {
                    "type": "tool_file",
                    "tool": self.type,
                    "file_id": file_id,
                    "file_name": file_name,
                    "file_type": extension,
                }
            )
            stored.append(
                {
                    "path": produced.name,
                    "file_id": file_id,
                    "file_name": file_name,
                    "bytes": len(produced.data),
                }
            )
        return chunks, stored, notes


def _text(result: SandboxResult, notes: list[str], stored: list[dict[str, Any]]) -> str:
    """The run as the model reads it."""
    lines: list[str] = []
    if result.exit_code is not None:
        lines.append(f"exit status: {result.exit_code}")
    lines += [f"note: {note}" for note in notes]
    for name, text in (("stdout", result.stdout), ("stderr", result.stderr)):
        if text:
            lines.append(f"{name}:\n{text.rstrip()}")
    if not result.stdout and not result.stderr:
        lines.append("(no output)")
    if stored:
        named = ", ".join(f"{f['path']} (file {f['file_id']})" for f in stored)
        lines.append(f"files: {named}")
    return "\n".join(lines)


def failed(message: str, info: dict[str, Any] | None = None) -> ToolOutcome:
    """A call that failed, as the model reads it."""
    return ToolOutcome(f"error: {message}", error=message, info=info or {})
