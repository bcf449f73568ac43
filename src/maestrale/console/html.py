"""The console's two HTML documents: the shell of every page (the JavaScript module fills it)
and the sign-in page (a plain form: signing in needs no script). Every value is escaped."""

from __future__ import annotations

from html import escape
from string import Template

STATIC = "/console/static"

_HEAD = Template(
    """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="same-origin">
$meta<title>$title · Maestrale console</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="$static/console.css">
$script</head>
"""
)

_SHELL_BODY = Template(
    """<body data-page="$page" data-id="$id">
<noscript><p class="error">The Maestrale console needs JavaScript.</p></noscript>
</body>
</html>
"""
)

_SIGN_IN_BODY = Template(
    """<body class="sign-in-page">
<main id="main" class="sign-in">
<h1>Maestrale console</h1>
$notice<form method="post" action="/console/session" class="card">
<div class="field">
<label for="api_key">API key</label>
<input id="api_key" name="api_key" type="password" autocomplete="off" spellcheck="false"
 required autofocus aria-describedby="api_key_hint">
<small class="hint" id="api_key_hint">A workspace key
 (sent as <code>Authorization: Bearer</code>).</small>
</div>
<div class="field">
<label for="admin_key">Admin key <span class="muted">(optional)</span></label>
<input id="admin_key" name="admin_key" type="password" autocomplete="off" spellcheck="false"
 aria-describedby="admin_key_hint">
<small class="hint" id="admin_key_hint">Opens the admin pages:
 keys, users, workspaces, limits, usage.</small>
</div>
<button type="submit" class="primary">Sign in</button>
</form>
<p class="muted small">The keys stay on the server for the session ($hours h at most); the
browser keeps only a session cookie that scripts cannot read.</p>
</main>
</body>
</html>
"""
)


def _hours(hours: float) -> str:
    return f"{hours:g}"


def shell(
    page: str,
    title: str,
    csrf_token: str,
    admin: bool,
    item_id: str = "",
    default_model: str = "",
) -> str:
    """The document of a console page: `static/js/app.js` renders `pages/<page>.js` into it.
    `default_model`: the chat model the playground starts on (the catalog's best real one)."""
    meta = (
        f'<meta name="csrf-token" content="{escape(csrf_token)}">\n'
        f'<meta name="console-admin" content="{"1" if admin else "0"}">\n'
        f'<meta name="default-model" content="{escape(default_model)}">\n'
    )
    script = f'<script type="module" src="{STATIC}/js/app.js"></script>\n'
    head = _HEAD.substitute(meta=meta, title=escape(title), static=STATIC, script=script)
    return head + _SHELL_BODY.substitute(page=escape(page), id=escape(item_id))


def sign_in(hours: float, error: str | None = None, info: str | None = None) -> str:
    """The sign-in page, with an error (a refused key) or a notice (signed out, expired)."""
    notice = ""
    if error:
        notice = f'<div class="error" role="alert">{escape(error)}</div>\n'
    elif info:
        notice = f'<div class="info" role="status">{escape(info)}</div>\n'
    head = _HEAD.substitute(meta="", title="Sign in", static=STATIC, script="")
    return head + _SIGN_IN_BODY.substitute(notice=notice, hours=escape(_hours(hours)))
