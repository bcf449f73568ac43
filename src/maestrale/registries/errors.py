"""The registries' errors: each a status and a stable code (`RegistryNotFound`, the 404, lives in
`lookup`, which the domains that run prompts and skills import)."""

from __future__ import annotations

from maestrale.core.errors import BadRequest, Conflict, Forbidden


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
