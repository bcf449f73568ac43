"""The prompts (`/v2/prompts`) and skills (`/v2/skills`) groups of mistralai 3.x: nine
operations each, every answer a 200 as the SDK expects. One router factory serves both kinds;
what differs (the request bodies, the definition's stored form) is the kind's `KindSpec`."""

# No `from __future__ import annotations`: the handlers' body types are the kind's, resolved
# when the factory runs.

from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Path, Query
from fastapi.responses import JSONResponse
from pydantic import BaseModel

from maestrale.core.auth.dependencies import StandardAuth
from maestrale.core.auth.principal import Principal, Tenant
from maestrale.core.errors import error_responses
from maestrale.core.routing import Work, domain_router
from maestrale.registries import schemas as s
from maestrale.registries.definitions import prompt_definition, skill_definition
from maestrale.registries.errors import InvalidQuery
from maestrale.registries.lookup import Kind
from maestrale.registries.repository import ListFilter, SortKey
from maestrale.registries.service import NewVersion, Order, RegistryService
from maestrale.registries.shapes import listed, object_doc, parse_fields, project, version_doc

MAX_PAGE_SIZE = 200
Fields = Annotated[list[str] | None, Query(max_length=100)]


@dataclass(frozen=True)
class KindSpec:
    kind: Kind
    plural: str
    create: type[BaseModel]
    create_version: type[BaseModel]
    update: type[BaseModel]
    out: type[BaseModel]
    page: type[BaseModel]
    version_list: type[BaseModel]
    stored: Callable[[Any], dict[str, Any]]  # a request's definition as stored


PROMPTS = KindSpec(
    "prompt",
    "prompts",
    s.PromptCreate,
    s.PromptVersionCreate,
    s.PromptUpdate,
    s.PromptOut,
    s.PromptList,
    s.PromptVersionList,
    prompt_definition,
)
SKILLS = KindSpec(
    "skill",
    "skills",
    s.SkillCreate,
    s.SkillVersionCreate,
    s.SkillUpdate,
    s.SkillOut,
    s.SkillList,
    s.SkillVersionList,
    skill_definition,
)


def _order(
    field: str | None, direction: str | None, sort_by: str | None, sort_direction: str | None
) -> Order:
    """The sort of a list from the SDK's enums (`sort.field`, `sort.direction`) or their REST
    spellings (`sort_by`, `sort_direction`); 400 when both are sent and disagree."""

    def one(enum: str | None, prefix: str, rest: str | None, what: str) -> str | None:
        value = None if enum is None else enum.removeprefix(prefix)
        if value == "unspecified":
            value = None
        if value is not None and rest is not None and value != rest:
            raise InvalidQuery(f"the two spellings of the sort {what} disagree", param=what)
        return rest or value

    key = one(field, "list_sort_field_", sort_by, "field") or "created_at"
    way = one(direction, "list_sort_direction_", sort_direction, "direction")
    return Order(key, way)  # type: ignore[arg-type]


def registry_router(spec: KindSpec) -> APIRouter:
    """The nine routes of one kind under `/v2/{plural}`."""
    kind = spec.kind
    router = domain_router(prefix=f"/v2/{spec.plural}", tags=[f"beta.{spec.plural}"])
    Create = spec.create
    CreateVersion = spec.create_version
    Update = spec.update
    ref = f"{{{kind}_id}}"

    def service(work: Any, principal: Principal) -> RegistryService:
        return RegistryService(work.session, Tenant.of(principal), kind)

    @router.get("", response_model=spec.page, responses=error_responses((400, 422)))
    async def list_objects(
        work: Work,
        principal: StandardAuth,
        page_size: Annotated[int, Query(alias="pageSize", ge=1, le=MAX_PAGE_SIZE)] = 50,
        page_token: Annotated[str | None, Query(alias="pageToken", max_length=2000)] = None,
        alias: Annotated[str | None, Query(max_length=s.MAX_NAME)] = None,
        fields: Fields = None,
        sort_field: Annotated[s.SortField | None, Query(alias="sort.field")] = None,
        sort_direction: Annotated[s.SortDirection | None, Query(alias="sort.direction")] = None,
        sort_by: Annotated[SortKey | None, Query()] = None,
        sort_direction_rest: Annotated[
            Literal["asc", "desc"] | None, Query(alias="sort_direction")
        ] = None,
        name: Annotated[str | None, Query(max_length=s.MAX_NAME)] = None,
        search: Annotated[str | None, Query(max_length=s.MAX_NAME)] = None,
    ) -> JSONResponse:
        """List the workspace's objects at their latest versions, by cursor (pass
        `nextPageToken` back as `pageToken`; absent on the last page). Filters: `alias` (the
        objects having it), `name` or `search` (a substring of the name, any case). Sort by
        created_at, last_modified_at, name or title (`sort.field`/`sort.direction` or
        `sort_by`/`sort_direction`); timestamps newest first by default, text A to Z."""
        paths = parse_fields(kind, fields, listing=True)
        order = _order(sort_field, sort_direction, sort_by, sort_direction_rest)
        where = ListFilter(alias, tuple(t for t in (name, search) if t))
        items, token = await service(work, principal).page(where, order, page_size, page_token)
        data = [listed(kind, project(object_doc(kind, item), paths)) for item in items]
        return JSONResponse({"data": data, **({"nextPageToken": token} if token else {})})

    @router.post("", response_model=spec.out, responses=error_responses((400, 409, 422)))
    async def create_object(body: Create, work: Work, principal: StandardAuth) -> JSONResponse:  # type: ignore[valid-type]
        """Create an object and its version 1 (with the `aliases` given). 409 when the name is
        taken in the workspace."""
        req: Any = body
        extra = {"title": req.title, "description": req.description} if kind == "prompt" else {}
        first = NewVersion(spec.stored(req.definition), req.notes, tuple(req.aliases or ()))
        created = await service(work, principal).create(
            req.name,
            first,
            sharing_scope=req.sharing_scope,
            workspace_relation=req.workspace_relation,
            **extra,
        )
        return JSONResponse(object_doc(kind, created))

    @router.get(f"/{ref}", response_model=spec.out, responses=error_responses((400, 404, 409)))
    async def get_object(
        work: Work,
        principal: StandardAuth,
        object_id: Annotated[str, _path(kind)],
        version: Annotated[int | None, Query(ge=1)] = None,
        alias: Annotated[str | None, Query(max_length=s.MAX_NAME)] = None,
        fields: Fields = None,
    ) -> JSONResponse:
        """An object (by id, or by name) at `version`, else at the version `alias` points to,
        else at its latest; `fields` projects it."""
        paths = parse_fields(kind, fields)
        found = await service(work, principal).get(object_id, version, alias)
        return JSONResponse(project(object_doc(kind, found), paths))

    @router.patch(
        f"/{ref}", response_model=spec.out, responses=error_responses((403, 404, 409, 422))
    )
    async def update_object(
        body: Update,  # type: ignore[valid-type]
        work: Work,
        principal: StandardAuth,
        object_id: Annotated[str, _path(kind)],
    ) -> JSONResponse:
        """Change the metadata sent (the sharing only by the object's creator)."""
        req: Any = body
        changes = {key: getattr(req, key) for key in req.model_fields_set}
        updated = await service(work, principal).update(object_id, changes)
        return JSONResponse(object_doc(kind, updated))

    @router.delete(f"/{ref}", response_model=s.Deleted, responses=error_responses((403, 404, 409)))
    async def delete_object(
        work: Work, principal: StandardAuth, object_id: Annotated[str, _path(kind)]
    ) -> JSONResponse:
        """Delete the object, its versions and its aliases."""
        await service(work, principal).delete(object_id)
        return JSONResponse({})

    @router.get(
        f"/{ref}/versions", response_model=spec.version_list, responses=error_responses((404, 409))
    )
    async def list_versions(
        work: Work, principal: StandardAuth, object_id: Annotated[str, _path(kind)]
    ) -> JSONResponse:
        """Every version of the object, newest first, with its aliases."""
        rows = await service(work, principal).versions(object_id)
        return JSONResponse({"data": [version_doc(kind, row, aliases) for row, aliases in rows]})

    @router.post(
        f"/{ref}/versions",
        response_model=s.VersionCreated,
        responses=error_responses((400, 403, 404, 409, 422)),
    )
    async def create_version(
        body: CreateVersion,  # type: ignore[valid-type]
        work: Work,
        principal: StandardAuth,
        object_id: Annotated[str, _path(kind)],
    ) -> JSONResponse:
        """Append a version (versions never change once created). A definition identical to
        the latest version's adds none: the answer is that version, `deduplicated: true`."""
        req: Any = body
        new = NewVersion(spec.stored(req.definition), req.notes, tuple(req.aliases or ()))
        number, same = await service(work, principal).add_version(object_id, new)
        return JSONResponse({"version": number, "deduplicated": same})

    @router.get(
        f"/{ref}/versions/{{version}}",
        response_model=spec.out,
        responses=error_responses((400, 404, 409)),
    )
    async def get_version(
        work: Work,
        principal: StandardAuth,
        object_id: Annotated[str, _path(kind)],
        version: Annotated[int, _version()],
        fields: Fields = None,
    ) -> JSONResponse:
        """The object at one version; `fields` projects it."""
        paths = parse_fields(kind, fields)
        found = await service(work, principal).get(object_id, version)
        return JSONResponse(project(object_doc(kind, found), paths))

    @router.patch(
        f"/{ref}/versions/{{version}}",
        response_model=spec.out,
        responses=error_responses((403, 404, 409, 422)),
    )
    async def update_version(
        body: s.VersionUpdate,
        work: Work,
        principal: StandardAuth,
        object_id: Annotated[str, _path(kind)],
        version: Annotated[int, _version()],
    ) -> JSONResponse:
        """Change a version's notes, or its aliases (`{"values": [...]}` sets exactly those,
        moving each from the version that held it; `{"values": []}` clears them; absent: they
        stay). The definition never changes."""
        changes = {"notes": body.notes} if "notes" in body.model_fields_set else {}
        aliases = None if body.aliases is None else list(body.aliases.values or ())
        updated = await service(work, principal).update_version(
            object_id, version, changes, aliases
        )
        return JSONResponse(object_doc(kind, updated))

    return router


def _path(kind: str) -> Any:
    return Path(alias=f"{kind}_id", min_length=1, max_length=200)


def _version() -> Any:
    return Path(ge=1)


prompts_router = registry_router(PROMPTS)
skills_router = registry_router(SKILLS)
