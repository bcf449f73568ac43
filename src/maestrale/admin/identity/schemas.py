"""Wire models of the identity routes, as mistralai 2.8 (`users.get_identity`) and 3.x
(`beta.users`) parse them."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field


class IdName(BaseModel):
    id: str
    name: str


class ApiKeyRef(BaseModel):
    id: str
    name: str | None


class UserIdentityOut(BaseModel):
    id: str
    email: str | None
    first_name: str | None
    last_name: str | None
    workspace: IdName | None
    organization: IdName | None
    api_key: ApiKeyRef | None


class OrganizationList(BaseModel):
    organizations: list[IdName]


class UserWorkspaceOut(IdName):
    organization_id: str


class WorkspaceList(BaseModel):
    workspaces: list[UserWorkspaceOut]


class WhoamiUser(BaseModel):
    principal_type: Literal["user"] = "user"
    id: str
    email: str | None
    first_name: str | None
    last_name: str | None


class WhoamiServiceAccount(BaseModel):
    principal_type: Literal["service_account"] = "service_account"
    service_account_id: str
    name: str | None


class WhoamiOrganization(IdName):
    org_tier: str | None = None
    internal: bool = False
    kind: str = "S"  # standard (the platform's 'C' and 'D' are its own internal kinds)


class WhoamiOut(BaseModel):
    principal: Annotated[WhoamiUser | WhoamiServiceAccount, Field(discriminator="principal_type")]
    organization: WhoamiOrganization | None
    workspace: IdName | None
