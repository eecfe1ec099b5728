"""The console's middleware: sign-in required everywhere but the sign-in pages, CSRF on every POST, errors
as HTML pages, and the security headers every console answer carries."""

from __future__ import annotations

import hmac
import logging
from urllib.parse import quote

from aiohttp import web

from ..errors import EngramError, NotAllowed
from .access import viewer_for, viewer_key
from .render import render, see_other
from .state import SESSION_COOKIE, console_state_key

log = logging.getLogger("engram.console")

PUBLIC_ROUTES = frozenset({"login", "login_link", "login_key", "static"})
JSON_ROUTES = frozenset({"graph_data"})
# The console's own status per domain error family (engram/errors.py), as each front door keeps one.
STATUS_BY_KIND = {
    "invalid": 400, "auth": 401, "forbidden": 403, "not_found": 404, "conflict": 409, "too_large": 413,
    "rate_limited": 429, "not_implemented": 501, "unavailable": 503,
}  # fmt: skip

# cytoscape.js adds one <style> element (".__________cytoscape_container { position: relative; }") to the
# page; its hash lets exactly that inline style through the policy, and nothing else.
CYTOSCAPE_STYLE_HASH = "'sha256-pgvDUBa4IjFA2yuSJ2cqcyxmNYJMborsd0ORcRv9vw8='"
CSP = (
    "default-src 'none'; script-src 'self'; "
    f"style-src 'self' {CYTOSCAPE_STYLE_HASH}; img-src 'self' data:; connect-src 'self'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)


@web.middleware
async def guard(request: web.Request, handler) -> web.StreamResponse:
    try:
        return await _guarded(request, handler)
    except EngramError as err:
        return error_page(request, STATUS_BY_KIND.get(err.kind, 500), err.name, err.message)
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        return error_page(request, exc.status, exc.reason, _http_message(request, exc))
    except Exception:
        log.exception("unhandled error on %s %s", request.method, request.path)
        return error_page(request, 500, "InternalServerError", "Something went wrong; the log has details.")


async def _guarded(request: web.Request, handler) -> web.StreamResponse:
    if request.match_info.route.name in PUBLIC_ROUTES:
        return await handler(request)
    state = request.app[console_state_key]
    cookie = request.cookies.get(SESSION_COOKIE)
    session = await state.sessions.get(cookie)
    viewer = await viewer_for(state.ctx, session) if session is not None else None
    if viewer is None:
        if session is not None:  # its key was revoked, lost `read`, or its space was deleted
            await state.sessions.end(cookie)
        return _signed_out(request)
    if request.method not in ("GET", "HEAD"):
        form = await request.post()
        if not hmac.compare_digest(str(form.get("csrf", "")).encode(), session.csrf.encode()):
            raise NotAllowed(
                "the form's CSRF token is missing or wrong; reload the page and try again", "BadCsrfToken"
            )
    request[viewer_key] = viewer
    return await handler(request)


def _signed_out(request: web.Request) -> web.StreamResponse:
    if request.method in ("GET", "HEAD") and request.match_info.route.name not in JSON_ROUTES:
        target = request.app.router["login"].url_for().with_query(next=request.path_qs)
        return see_other(str(target))
    return error_page(request, 401, "AuthRequired", "Sign in to the console first.")


def _http_message(request: web.Request, exc: web.HTTPException) -> str:
    if exc.status == 404:
        return f"Nothing at {quote(request.path)}."
    if exc.status == 405:
        return f"{request.method} is not allowed here."
    return exc.text or exc.reason


def error_page(request: web.Request, status: int, name: str, message: str) -> web.StreamResponse:
    if request.match_info.route.name in JSON_ROUTES:
        return web.json_response({"error": name, "message": message}, status=status)
    return render(request, "error.html", {"status": status, "name": name, "message": message}, status=status)


async def security_headers(request: web.Request, response: web.StreamResponse) -> None:
    # engram's API answers every origin (CORS *); console pages are for this origin only.
    response.headers.pop("Access-Control-Allow-Origin", None)
    response.headers.pop("Access-Control-Expose-Headers", None)
    response.headers["Content-Security-Policy"] = CSP
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["X-Frame-Options"] = "DENY"
    # A sign-in link carries its token in the URL: never leak a console URL to another site.
    response.headers["Referrer-Policy"] = "no-referrer"
    if request.match_info.route.name != "static":
        response.headers["Cache-Control"] = "no-store"  # pages can show a just-created API key
