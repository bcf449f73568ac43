"""The console's HTML routes: the page shells, the sign-in page, sign-in and sign-out.

A shell is served only with a live session (else a redirect to sign-in): it carries the
session's CSRF token for the page's API calls through the proxy (`console.proxy`).
"""

from __future__ import annotations

from typing import Any

import orjson
from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response

from maestrale.config import Settings
from maestrale.console import html
from maestrale.console.proxy import CSRF_HEADER, cross_site
from maestrale.console.security import HEADERS
from maestrale.console.session import COOKIE, COOKIE_PATH, OpenSession, SessionStore, store_of
from maestrale.core.app_services import app_services
from maestrale.core.auth.dependencies import resolve_key
from maestrale.core.errors import error_body

router = APIRouter(prefix="/console", include_in_schema=False)

EXPIRED = "Your session ended (key expired or revoked): sign in again."
SIGNED_OUT = "You are signed out."
_NO_STORE = {**HEADERS, "cache-control": "no-store"}
_MAX_KEY = 512

# path -> (page module, title). The conversation view has its id in the path (below).
PAGES: dict[str, tuple[str, str]] = {
    "/playground": ("playground", "Playground"),
    "/agents": ("agents", "Agents"),
    "/files": ("files", "Files"),
    "/batch": ("batch", "Batch"),
    "/observability": ("observability", "Observability"),
    "/traces": ("traces", "Traces"),
    "/judges": ("judges", "Judges"),
    "/campaigns": ("campaigns", "Campaigns"),
    "/datasets": ("datasets", "Datasets"),
    "/admin/keys": ("admin-keys", "Keys"),
    "/admin/users": ("admin-users", "Users"),
    "/admin/workspaces": ("admin-workspaces", "Workspaces"),
    "/admin/limits": ("admin-limits", "Limits"),
    "/admin/usage": ("admin-usage", "Usage"),
}


def _store(request: Request) -> SessionStore:
    return store_of(request)


def _redirect(url: str) -> RedirectResponse:
    return RedirectResponse(url, status_code=303, headers=_NO_STORE)


def _sign_in_page(request: Request, status: int = 200, **notice: str | None) -> HTMLResponse:
    settings: Settings = app_services(request).settings
    hours = settings.console_session_hours
    return HTMLResponse(html.sign_in(hours, **notice), status_code=status, headers=_NO_STORE)


async def _live_session(request: Request) -> OpenSession | Response:
    """The request's session with its keys still valid; else the redirect to sign-in (with the
    message when the session ended because its key did)."""
    store = _store(request)
    session = await store.open(request.cookies.get(COOKIE))
    if session is None:
        expired = COOKIE in request.cookies
        response = _redirect("/console/sign-in?expired=1" if expired else "/console/sign-in")
        response.delete_cookie(COOKIE, path=COOKIE_PATH)
        return response
    keys = [(session.api_key, "standard")]
    if session.admin_key is not None:
        keys.append((session.admin_key, "admin"))
    for key, kind in keys:
        principal = await resolve_key(request, key)
        if principal is None or principal.kind != kind:
            await store.delete(session.id)
            response = _redirect("/console/sign-in?expired=1")
            response.delete_cookie(COOKIE, path=COOKIE_PATH)
            return response
    return session


async def _shell(request: Request, page: str, title: str, item_id: str = "") -> Response:
    session = await _live_session(request)
    if isinstance(session, Response):
        return session
    best = app_services(request).engines.best("completion_chat")
    document = html.shell(
        page, title, session.csrf_token, session.is_admin, item_id, best.id if best else ""
    )
    return HTMLResponse(document, headers=_NO_STORE)


def _shell_route(path: str, page: str, title: str) -> None:
    async def show(request: Request) -> Response:
        return await _shell(request, page, title)

    show.__name__ = f"console_{page.replace('-', '_')}"
    router.add_api_route(path, show, methods=["GET"], response_class=HTMLResponse)


for _path, (_page, _title) in PAGES.items():
    _shell_route(_path, _page, _title)


@router.get("", response_class=HTMLResponse)
async def console_home() -> Response:
    return _redirect("/console/playground")


@router.get("/conversations/{conversation_id}", response_class=HTMLResponse)
async def console_conversation(request: Request, conversation_id: str) -> Response:
    return await _shell(request, "conversation", "Conversation", conversation_id)


@router.get("/traces/{trace_id}", response_class=HTMLResponse)
async def console_trace(request: Request, trace_id: str) -> Response:
    return await _shell(request, "traces", "Trace", trace_id)


@router.get("/sign-in", response_class=HTMLResponse)
async def sign_in_page(request: Request) -> Response:
    if request.query_params.get("expired"):
        return _sign_in_page(request, error=EXPIRED)
    if request.query_params.get("signed_out"):
        return _sign_in_page(request, info=SIGNED_OUT)
    return _sign_in_page(request)


async def _fields(request: Request) -> dict[str, str]:
    """The posted fields, from a form or a JSON object (strings only)."""
    if request.headers.get("content-type", "").startswith("application/json"):
        try:
            data: Any = orjson.loads(await request.body())
        except orjson.JSONDecodeError:
            data = None
        pairs: list[tuple[str, Any]] = list(data.items()) if isinstance(data, dict) else []
    else:
        pairs = list((await request.form()).items())
    return {k: v.strip() for k, v in pairs if isinstance(v, str) and len(v) <= _MAX_KEY}


async def _key_problem(request: Request, api_key: str, admin_key: str) -> str | None:
    """Why the keys do not open a session (None when they do)."""
    if not api_key:
        return "Enter an API key."
    principal = await resolve_key(request, api_key)
    if principal is None:
        return "This API key is not valid: unknown, expired or revoked."
    if principal.kind != "standard":
        return "This is an admin key: enter a workspace API key first, the admin key second."
    if admin_key:
        admin = await resolve_key(request, admin_key)
        if admin is None or admin.kind != "admin":
            return "The admin key is not valid: unknown, expired or revoked, or not an admin key."
    return None


@router.post("/session", response_class=HTMLResponse)
async def create_session(request: Request) -> Response:
    """Sign-in: checks the keys as the API does, then opens a session (cookie)."""
    wants_json = request.headers.get("content-type", "").startswith("application/json")
    if cross_site(request):
        body = error_body("cross-site sign-in refused", "permission_error", "console_cross_site")
        return JSONResponse(body, status_code=403, headers=_NO_STORE)
    fields = await _fields(request)
    api_key, admin_key = fields.get("api_key", ""), fields.get("admin_key", "")
    problem = await _key_problem(request, api_key, admin_key)
    if problem is not None:
        if wants_json:
            body = error_body(problem, "authentication_error", "console_sign_in_refused")
            return JSONResponse(body, status_code=401, headers=_NO_STORE)
        return _sign_in_page(request, status=401, error=problem)
    replacing = request.cookies.get(COOKIE)
    created = await _store(request).create(api_key, admin_key or None, replacing)
    response: Response
    if wants_json:
        content = {"expires_at": created.session.expires_at.isoformat(), "admin": bool(admin_key)}
        response = JSONResponse(content, status_code=201, headers=_NO_STORE)
    else:
        response = _redirect("/console/playground")
    response.set_cookie(
        COOKIE,
        created.token,
        max_age=int(_store(request).lifetime.total_seconds()),
        path=COOKIE_PATH,
        secure=request.url.scheme == "https",
        httponly=True,
        samesite="strict",
    )
    return response


@router.post("/session/delete", response_class=HTMLResponse)
async def delete_session(request: Request) -> Response:
    """Sign-out: ends the session (it needs the page's CSRF token) and clears the cookie."""
    if cross_site(request):
        body = error_body("cross-site sign-out refused", "permission_error", "console_cross_site")
        return JSONResponse(body, status_code=403, headers=_NO_STORE)
    store = _store(request)
    session = await store.open(request.cookies.get(COOKIE))
    if session is not None:
        token = request.headers.get(CSRF_HEADER) or (await _fields(request)).get("csrf_token")
        if not session.csrf_matches(token):
            body = error_body(
                "missing or wrong CSRF token", "permission_error", "console_csrf_failed"
            )
            return JSONResponse(body, status_code=403, headers=_NO_STORE)
        await store.delete(session.id)
    response = _redirect("/console/sign-in?signed_out=1")
    response.delete_cookie(COOKIE, path=COOKIE_PATH)
    return response
