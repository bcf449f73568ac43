"""A span per database statement run under a traced request or job (SQLAlchemy's cursor events on
the engine): the statement's text, without its parameters (prompts, documents, key hashes live
there), cut to `MAX_STATEMENT_CHARS`. Statements of untraced work (the accounting writer, the
job queue's polling) make no span."""

from __future__ import annotations

from typing import Any

from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode
from sqlalchemy import event
from sqlalchemy.engine import Connection, ExceptionContext
from sqlalchemy.engine.interfaces import ExecutionContext
from sqlalchemy.ext.asyncio import AsyncEngine

from maestrale.tracing.provider import Tracing

MAX_STATEMENT_CHARS = 2000
_SPAN = "_maestrale_span"  # where a statement's span waits for its end, on its execution context
_SYSTEMS = {"postgresql": "postgresql", "sqlite": "sqlite"}


def _operation(statement: str) -> str:
    word = statement.lstrip()[:16].split(None, 1)
    return word[0].upper() if word else "SQL"


def instrument(engine: AsyncEngine, tracing: Tracing) -> None:
    """Trace the statements of `engine` with `tracing`'s tracer."""
    sync = engine.sync_engine
    system = _SYSTEMS.get(sync.dialect.name, sync.dialect.name)
    tracer = tracing.tracer

    def before(
        conn: Connection,
        cursor: Any,
        statement: str,
        parameters: Any,
        context: ExecutionContext | None,
        executemany: bool,
    ) -> None:
        if context is None or not trace.get_current_span().is_recording():
            return
        operation = _operation(statement)
        attributes = {
            "db.system.name": system,
            "db.operation.name": operation,
            "db.query.text": statement[:MAX_STATEMENT_CHARS],
        }
        span = tracer.start_span(operation, kind=SpanKind.CLIENT, attributes=attributes)
        setattr(context, _SPAN, span)

    def after(
        conn: Connection,
        cursor: Any,
        statement: str,
        parameters: Any,
        context: ExecutionContext | None,
        executemany: bool,
    ) -> None:
        span: Span | None = getattr(context, _SPAN, None)
        if span is not None:
            setattr(context, _SPAN, None)
            span.end()

    def failed(error: ExceptionContext) -> None:
        span: Span | None = getattr(error.execution_context, _SPAN, None)
        if span is not None:
            setattr(error.execution_context, _SPAN, None)
            kind = type(error.original_exception).__name__
            span.set_attribute("error.type", kind)
            span.set_status(Status(StatusCode.ERROR, kind))
            span.end()

    event.listen(sync, "before_cursor_execute", before)
    event.listen(sync, "after_cursor_execute", after)
    event.listen(sync, "handle_error", failed)
