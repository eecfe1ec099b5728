"""Signing in (an operator's one-time link, or a reader's API key) and out.

Opening a link only shows a "Sign in" button; the POST redeems the link. A GET that signed in would let
link previewers and prefetchers burn the one-time link. The sign-in forms carry a CSRF value that is
also set as a cookie (double submit), since no session exists yet to hold one.
"""

from __future__ import annotations

import hmac
import secrets

from aiohttp import web

from ...errors import NotAllowed, NotAuthenticated
from ...service import apikeys
from ..access import READ_SCOPE
from ..login_links import redeem_link_token
from ..render import render, see_other
from ..sessions import OPERATOR, READER
from ..state import LOGIN_COOKIE, SESSION_COOKIE, console_state_key

LOGIN_COOKIE_AGE_S = 3600


def _safe_next(raw: str | None) -> str:
    """Only a console path: `next` must never send a signed-in browser elsewhere (open redirect), and only
    printable ASCII, as a URL path is written in a Location header (a control character there would drop
    the answer after the sign-in link was spent; anything else non-ASCII comes percent-encoded)."""
    if (
        raw
        and raw.startswith("/console/")
        and not raw.startswith("//")
        and "\\" not in raw
        and all("\x21" <= ch <= "\x7e" for ch in raw)
    ):
        return raw
    return "/console/"


async def login_page(request: web.Request) -> web.StreamResponse:
    state = request.app[console_state_key]
    form_csrf = request.cookies.get(LOGIN_COOKIE) or secrets.token_urlsafe(24)
    response = render(request, "signin.html", {
        "link_token": request.query.get("token", ""),
        "next": _safe_next(request.query.get("next")),
        "form_csrf": form_csrf,
        "reason": request.query.get("reason", ""),
    })  # fmt: skip
    state.set_cookie(response, LOGIN_COOKIE, form_csrf, LOGIN_COOKIE_AGE_S)
    return response


async def _checked_form(request: web.Request):
    form = await request.post()
    cookie = request.cookies.get(LOGIN_COOKIE, "")
    sent = str(form.get("csrf", ""))
    if not cookie or not hmac.compare_digest(sent.encode(), cookie.encode()):
        raise NotAllowed("the sign-in form expired; reload the page and try again", "BadCsrfToken")
    return form


async def _signed_in(
    request: web.Request, role: str, key_id: int | None, next_url: str
) -> web.StreamResponse:
    state = request.app[console_state_key]
    await state.sessions.end(request.cookies.get(SESSION_COOKIE))  # a fresh session id on every sign-in
    cookie, _ = await state.sessions.start(role, key_id)
    response = see_other(_safe_next(next_url))
    state.set_cookie(response, SESSION_COOKIE, cookie, int(state.sessions.ttl_s))
    state.clear_cookie(response, LOGIN_COOKIE)
    return response


async def login_with_link(request: web.Request) -> web.StreamResponse:
    form = await _checked_form(request)
    state = request.app[console_state_key]
    token = str(form.get("token", ""))
    redeemed = await redeem_link_token(state.ctx.store, token, state.clock())
    if not redeemed:
        raise NotAuthenticated(
            "this sign-in link was already used or has expired; run `engram console login` for a new one",
            "LinkUsedOrExpired",
        )
    return await _signed_in(request, OPERATOR, None, str(form.get("next", "")))


async def login_with_key(request: web.Request) -> web.StreamResponse:
    form = await _checked_form(request)
    state = request.app[console_state_key]
    key = await apikeys.find_live_api_key(state.ctx.store, str(form.get("api_key", "")).strip())
    if key is None:
        raise NotAuthenticated("that API key is unknown or revoked", "InvalidApiKey")
    if READ_SCOPE not in key.scopes:
        raise NotAllowed("that API key has no read scope; the console only reads", "MissingScope")
    return await _signed_in(request, READER, key.id, str(form.get("next", "")))


async def logout(request: web.Request) -> web.StreamResponse:
    state = request.app[console_state_key]
    await state.sessions.end(request.cookies.get(SESSION_COOKIE))
    response = see_other(str(request.app.router["login"].url_for().with_query(reason="signed-out")))
    state.clear_cookie(response, SESSION_COOKIE)
    return response
