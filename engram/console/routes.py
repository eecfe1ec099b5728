"""The console sub-application: its routes, templates, static files and middleware."""

from __future__ import annotations

from pathlib import Path

from aiohttp import web

from ..context import AppContext
from .guard import guard, security_headers
from .pages import documents, graph, keys, memory, signin, space, spaces
from .render import setup_templates
from .state import ConsoleState, console_state_key

STATIC_DIR = Path(__file__).resolve().parent / "static"


def build_console_app(ctx: AppContext) -> web.Application:
    console = web.Application(middlewares=[guard])
    console[console_state_key] = ConsoleState.for_context(ctx)
    setup_templates(console)
    console.on_response_prepare.append(security_headers)
    r = console.router
    r.add_get("/", spaces.spaces_page, name="spaces")
    r.add_get("/space", space.space_page, name="space")
    r.add_get("/memory", memory.memory_page, name="memory")
    r.add_get("/documents", documents.documents_page, name="documents")
    r.add_get("/document", documents.document_page, name="document")
    r.add_get("/graph", graph.graph_page, name="graph")
    r.add_get("/graph.json", graph.graph_data, name="graph_data")
    r.add_get("/keys", keys.keys_page, name="keys")
    r.add_post("/keys", keys.create_key, name="keys_create")
    r.add_post("/keys/revoke", keys.revoke_key, name="keys_revoke")
    r.add_get("/login", signin.login_page, name="login")
    r.add_post("/login", signin.login_with_link, name="login_link")
    r.add_post("/login/key", signin.login_with_key, name="login_key")
    r.add_post("/logout", signin.logout, name="logout")
    r.add_static("/static/", STATIC_DIR, name="static", append_version=False)
    return console
