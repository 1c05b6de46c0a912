"""Logging in to the dashboard: a form that takes a token, checked by the gate as the run page's
method would be, and kept in an HttpOnly, SameSite=Strict cookie; logging out drops it."""

from __future__ import annotations

from urllib.parse import parse_qsl

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from ledger.domain.errors import LedgerError
from ledger.domain.reasons import Reason
from services.web import api
from services.web.access import METHODS, TOKEN_COOKIE, WebError
from services.web.markup import e, layout

__all__ = ["login", "login_post", "logout", "login_form"]

TOKEN_LENGTH_MAX = 512
FORM_BYTES_MAX = 4_096


def _next_path(value: str) -> str:
    """Where to go after logging in: a path of this site only."""
    if not value.startswith("/") or value.startswith("//") or "\\" in value:
        return "/"
    return value


def login_form(next_path: str, message: str = "", status: int = 200) -> HTMLResponse:
    problem = f'<p class="error" role="alert">{e(message)}</p>' if message else ""
    body = (
        "<h1>Log in</h1><p>Authentication is on: paste a token (<code>tl_…</code>, from "
        "<code>trainledger tokens create</code>).</p>"
        f"{problem}"
        '<form class="login" method="post" action="/login">'
        f'<input type="hidden" name="next" value="{e(next_path)}">'
        '<label>token <input type="password" name="token" autocomplete="current-password" required></label>'
        '<button type="submit">log in</button></form>'
    )
    return layout("login", "log in", body, status=status)


async def login(request: Request) -> Response:
    return login_form(_next_path(request.query_params.get("next", "/")))


async def _form(request: Request) -> dict[str, str]:
    """The fields of a small urlencoded form (the login form), the first value of each."""
    if request.headers.get("content-type", "").split(";")[0].strip() != "application/x-www-form-urlencoded":
        return {}
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > FORM_BYTES_MAX:
            raise WebError(413, Reason.REQUEST_TOO_LARGE, f"a form is at most {FORM_BYTES_MAX} bytes")
    try:
        pairs = parse_qsl(body.decode(), keep_blank_values=True, max_num_fields=8)
    except (UnicodeDecodeError, ValueError):
        return {}
    form: dict[str, str] = {}
    for key, value in pairs:
        form.setdefault(key, value)
    return form


async def login_post(request: Request) -> Response:
    web = api.web_of(request)
    form = await _form(request)
    token = form.get("token", "").strip()
    next_path = _next_path(form.get("next", "/"))
    if not token or len(token) > TOKEN_LENGTH_MAX:
        return login_form(next_path, "give a token", 400)
    try:
        await web.access.gate.authenticate(METHODS["run"], {"authorization": f"Bearer {token}"})
    except LedgerError as error:
        return login_form(next_path, f"{error.reason}: {error.message}", 401)
    response = RedirectResponse(next_path, status_code=303)
    response.set_cookie(
        TOKEN_COOKIE, token, httponly=True, samesite="strict", secure=request.url.scheme == "https", path="/"
    )
    return response


async def logout(request: Request) -> Response:
    response = RedirectResponse("/login", status_code=303)
    response.delete_cookie(TOKEN_COOKIE, path="/")
    return response
