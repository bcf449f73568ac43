"""The registries' errors: each a status and a stable code (`RegistryNotFound`, the 404, lives in
`lookup`, which the domains that run prompts and skills import)."""

from __future__ import annotations

from typing import Any

from maestrale.core.errors import AppError, BadRequest, Conflict, Forbidden


class NameTaken(Conflict):
    code = "name_taken"


class AmbiguousReference(Conflict):
    code = "ambiguous_reference"


class VersionConflict(Conflict):
    """Another version was created at the same time: the caller retries."""

    code = "version_conflict"


class ReadOnly(Forbidden):
    code = "read_only"


class UndeclaredVariable(BadRequest):
    code = "undeclared_variable"


class InvalidQuery(BadRequest):
    code = "invalid_query"


class RegistryInvalid(AppError):
    """422 in FastAPI's shape, for the rules a request model cannot check alone."""

    status_code = 422
    code = "validation_error"

    def __init__(self, loc: list[str | int], message: str) -> None:
        super().__init__(f"{'.'.join(str(p) for p in loc)}: {message}")
        self.detail = [{"loc": loc, "msg": message, "type": "value_error"}]

    def body(self) -> dict[str, Any]:
        return {"detail": self.detail}
