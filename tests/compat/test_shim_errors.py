"""The shims' error middleware: every failure under a shim's paths is in the shim's shape; other paths
keep the XRPC shape. A tiny shim mounted on a real aiohttp app with engram's HTTP basics."""

from __future__ import annotations

import pytest
from aiohttp import web

from engram.compat.errors import shim_error_middleware
from engram.compat.requests import json_response, read_json_object
from engram.compat.shim import Shim
from engram.errors import Conflict, EngramError
from engram.space_scopes import SpaceScopes
from engram.xrpc.middleware import install_http_basics


def render(err: EngramError) -> web.Response:
    status = {"invalid": 400, "not_found": 404, "method_not_allowed": 405, "too_large": 413}.get(
        err.kind, 500
    )
    return json_response({"shim_error": err.name, "text": err.message}, status)


def add_routes(router: web.UrlDispatcher, ctx) -> None:
    async def echo(request: web.Request) -> web.Response:
        return json_response(await read_json_object(request))

    async def conflict(request: web.Request) -> web.Response:
        raise Conflict("taken", "Taken")

    async def crash(request: web.Request) -> web.Response:
        raise RuntimeError("secret detail")

    router.add_post("/toy/echo", echo)
    router.add_get("/toy/conflict", conflict)
    router.add_get("/toy/crash", crash)


TOY = Shim("toy", ("/toy",), add_routes, render, openapi=lambda: {"openapi": "3.1.0"})


@pytest.fixture
async def client(aiohttp_client):
    app = web.Application(client_max_size=1000)
    install_http_basics(app)
    TOY.mount(app, None, SpaceScopes())
    app.middlewares.append(shim_error_middleware([TOY]))
    return await aiohttp_client(app)


@pytest.mark.parametrize(
    ("method", "path", "body", "status", "name"),
    [
        ("POST", "/toy/echo", b"{not json", 400, "InvalidJson"),
        ("POST", "/toy/echo", b"[1, 2]", 400, "InvalidJson"),
        ("POST", "/toy/echo", b"x" * 5000, 413, "PayloadTooLarge"),
        ("GET", "/toy/echo", None, 405, "MethodNotAllowed"),
        ("GET", "/toy/nowhere", None, 404, "NotFound"),
        ("GET", "/toy/conflict", None, 500, "Taken"),
        ("GET", "/toy/crash", None, 500, "InternalServerError"),
    ],
)
async def test_every_failure_under_a_shim_path_has_the_shim_shape(client, method, path, body, status, name):
    resp = await client.request(method, path, data=body)
    payload = await resp.json()
    assert resp.status == status
    assert payload["shim_error"] == name
    assert "error" not in payload and "secret detail" not in payload["text"]


async def test_paths_outside_the_shim_keep_the_xrpc_shape(client):
    resp = await client.get("/toyx/echo")
    assert resp.status == 404
    assert set(await resp.json()) == {"error", "message"}


async def test_openapi_is_served_and_valid_json_bodies_pass(client):
    assert (await (await client.get("/compat/toy/openapi.json")).json()) == {"openapi": "3.1.0"}
    resp = await client.post("/toy/echo", json={"a": 1})
    assert resp.status == 200 and await resp.json() == {"a": 1}
