"""The time budget of a search (MAESTRALE_OBSERVABILITY_SEARCH_TIMEOUT) and the group's answer
when a search outgrows it (408 DATABASE_TIMEOUT), or when Postgres refuses a regular expression
that RE2 accepted (400)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession

from maestrale.core.auth.principal import Tenant
from maestrale.core.budget import Budget, StatementTimeout, sqlstate, statement_budget
from maestrale.observability.errors import ObservabilityError, bad_search

# Seconds a search may run in the database (the routes pass the configured one).
DEFAULT_BUDGET = 30.0
# invalid_regular_expression, program_limit_exceeded ("regular expression is too complex").
_REGEX_STATES = {"2201B", "54001"}
# How Postgres words a statement timeout that interrupts a regular expression (REG_CANCEL): it
# comes as an invalid regular expression (2201B), not as a cancelled query (57014).
_CANCELLED = "operation cancelled"


class SearchRepository:
    """The base of a repository whose searches each run within `budget` seconds (408 past
    it), scoped to the tenant's workspace."""

    def __init__(
        self, session: AsyncSession, tenant: Tenant, *, budget: float = DEFAULT_BUDGET
    ) -> None:
        self.session = session
        self.tenant = tenant
        self.budget = budget

    @property
    def dialect(self) -> str:
        return self.session.get_bind().dialect.name


@asynccontextmanager
async def search_budget(
    target: AsyncSession | AsyncConnection, seconds: float, *, total: float | None = None
) -> AsyncIterator[Budget]:
    """`seconds` for the block; `total`, the search's whole budget when the block has what
    is left of it (the error names the whole)."""
    try:
        async with statement_budget(target, seconds, custom_plans=True) as budget:
            yield budget
    except StatementTimeout as exc:
        raise _out_of_time(total or seconds) from exc
    except Exception as exc:
        if sqlstate(exc) in _REGEX_STATES:
            reason = str(exc.orig if isinstance(exc, DBAPIError) else exc).splitlines()[0]
            if _CANCELLED in reason:  # the timeout struck while Postgres ran the expression
                raise _out_of_time(total or seconds) from exc
            raise bad_search(f"invalid regular expression: {reason}") from exc
        raise


def _out_of_time(seconds: float) -> ObservabilityError:
    return ObservabilityError(
        f"the search ran out of its time budget of {seconds:g} s: narrow it "
        "(a created_at range, a model, a longer text to look for) or ask the operator to "
        "raise MAESTRALE_OBSERVABILITY_SEARCH_TIMEOUT",
        "DATABASE_TIMEOUT",
        status_code=408,
    )
