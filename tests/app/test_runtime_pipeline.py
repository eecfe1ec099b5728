"""The XRPC runtime through a real aiohttp server, with small inline io.example.* lexicons."""

from __future__ import annotations

import pytest
from aiohttp import web

from engram.errors import InvalidInput, NotAuthenticated, RateLimited
from engram.space_scopes import SpaceScopes
from engram.xrpc.lexicons import LexiconRegistry
from engram.xrpc.middleware import install_http_basics
from engram.xrpc.server import XrpcServer, reads_body_first

LEXICONS = [
    {
        "lexicon": 1,
        "id": "io.example.echo",
        "defs": {
            "main": {
                "type": "query",
                "parameters": {
                    "type": "params",
                    "required": ["name"],
                    "properties": {
                        "name": {"type": "string", "maxLength": 8},
                        "n": {"type": "integer", "minimum": 1, "maximum": 5, "default": 2},
                        "tags": {"type": "array", "items": {"type": "string"}, "maxLength": 3},
                    },
                },
                "output": {
                    "encoding": "application/json",
                    "schema": {
                        "type": "object",
                        "required": ["name", "n"],
                        "properties": {
                            "name": {"type": "string"},
                            "n": {"type": "integer"},
                            "tags": {"type": "array", "items": {"type": "string"}},
                        },
                    },
                },
                "errors": [{"name": "Declared"}],
            }
        },
    },
    {
        "lexicon": 1,
        "id": "io.example.put",
        "defs": {
            "main": {
                "type": "procedure",
                "input": {
                    "encoding": "application/json",
                    "schema": {
                        "type": "object",
                        "required": ["text"],
                        "properties": {"text": {"type": "string"}},
                    },
                },
                "output": {
                    "encoding": "application/json",
                    "schema": {
                        "type": "object",
                        "required": ["length"],
                        "properties": {"length": {"type": "integer"}},
                    },
                },
            }
        },
    },
    {
        "lexicon": 1,
        "id": "io.example.unbuilt",
        "defs": {"main": {"type": "query"}},
    },
]
# The same procedure behind an auth hook that does not read the body.
LEXICONS.append({**LEXICONS[-2], "id": "io.example.putAfterAuth"})


def build_app(behaviour: dict, *, validate_every_output: bool = True) -> web.Application:
    registry = LexiconRegistry.from_docs(LEXICONS)
    xrpc = XrpcServer(registry, max_body_bytes=1024, validate_every_output=validate_every_output)

    async def echo(call):
        mode = call.params["name"]
        if mode == "bad-out":
            return {"name": 5, "n": "x"}
        if mode == "declared":
            raise InvalidInput("a declared error", "Declared")
        if mode == "undecl":
            raise InvalidInput("nobody declared this", "NotInLexicon")
        if mode == "boom":
            raise RuntimeError("secret internal detail")
        if mode == "limited":
            raise RateLimited("slow down", retry_after=0.2, limit=5, remaining=0, reset=7)
        return {"name": mode, "n": call.params["n"], "tags": call.params.get("tags", [])}

    async def put(call):
        behaviour["auth_saw"] = call.auth
        return {"length": len(call.input["text"])}

    @reads_body_first
    async def auth(request, params, body):
        return {"body_space": (body or {}).get("text")}

    async def header_auth(request, params, body):
        behaviour["header_auth_saw_body"] = body
        if request.headers.get("Authorization") != "Bearer ok":
            raise NotAuthenticated("no", "AuthRequired")
        return "ok"

    async def put_after_auth(call):
        return {"length": len(call.input["text"])}

    xrpc.add("io.example.echo", echo)
    xrpc.add("io.example.put", put, auth=auth)
    xrpc.add("io.example.putAfterAuth", put_after_auth, auth=header_auth)
    app = web.Application(client_max_size=1024)
    install_http_basics(app)
    xrpc.install(app, SpaceScopes())
    behaviour["xrpc"] = xrpc
    return app


@pytest.fixture
async def client(aiohttp_client):
    behaviour: dict = {}
    c = await aiohttp_client(build_app(behaviour))
    c.behaviour = behaviour
    return c


async def test_query_params_defaults_and_repeated_array_keys(client):
    r = await client.get("/xrpc/io.example.echo?name=al&tags=a&tags=b")
    assert r.status == 200
    assert await r.json() == {"name": "al", "n": 2, "tags": ["a", "b"]}


@pytest.mark.parametrize(
    "query,needle",
    [
        ("", '"name"'),
        ("name=123456789", '"name"'),
        ("name=a&n=9", '"n"'),
        ("name=a&n=x", '"n"'),
        ("name=a&tags=1&tags=2&tags=3&tags=4", '"tags"'),
    ],
)
async def test_bad_params_are_invalid_request_naming_the_parameter(client, query, needle):
    r = await client.get(f"/xrpc/io.example.echo?{query}")
    assert r.status == 400
    body = await r.json()
    assert body["error"] == "InvalidRequest"
    assert needle.strip('"') in body["message"]


async def test_unknown_nsid_is_501(client):
    r = await client.get("/xrpc/io.example.nope")
    assert r.status == 501
    assert (await r.json())["error"] == "MethodNotImplemented"


async def test_lexicon_method_without_handler_is_501_and_listed(client):
    r = await client.get("/xrpc/io.example.unbuilt")
    assert r.status == 501
    assert (await r.json())["error"] == "MethodNotImplemented"
    assert client.behaviour["xrpc"].unbuilt() == {"io.example.unbuilt"}


async def test_wrong_verb_is_400(client):
    r = await client.post("/xrpc/io.example.echo?name=a")
    assert r.status == 400 and (await r.json())["error"] == "InvalidRequest"
    r = await client.get("/xrpc/io.example.put")
    assert r.status == 400 and (await r.json())["error"] == "InvalidRequest"


async def test_procedure_input_validated_after_auth_sees_body(client):
    r = await client.post("/xrpc/io.example.put", json={"text": "hello"})
    assert r.status == 200 and await r.json() == {"length": 5}
    assert client.behaviour["auth_saw"] == {"body_space": "hello"}
    r = await client.post("/xrpc/io.example.put", json={"nope": 1})
    assert r.status == 400 and (await r.json())["error"] == "InvalidRequest"
    r = await client.post(
        "/xrpc/io.example.put", data=b"{not json", headers={"Content-Type": "application/json"}
    )
    assert r.status == 400 and (await r.json())["error"] == "InvalidRequest"


async def test_oversized_body_is_413(client):
    r = await client.post("/xrpc/io.example.put", json={"text": "x" * 5000})
    assert r.status == 413
    assert (await r.json())["error"] == "PayloadTooLarge"


async def test_output_violating_its_lexicon_is_a_500(client):
    r = await client.get("/xrpc/io.example.echo?name=bad-out")
    assert r.status == 500
    assert await r.json() == {"error": "InternalServerError", "message": "Internal Server Error"}


async def test_without_validate_every_output_each_method_is_checked_once(aiohttp_client):
    """Production (ENGRAM_VALIDATE_OUTPUT=0): a method's first answer is checked, later ones trusted."""
    client = await aiohttp_client(build_app({}, validate_every_output=False))
    r = await client.get("/xrpc/io.example.echo?name=bad-out")
    assert r.status == 500  # the first answer of a method is always checked
    r = await client.get("/xrpc/io.example.echo?name=fine&n=1")
    assert r.status == 200
    r = await client.get("/xrpc/io.example.echo?name=bad-out")
    assert r.status == 200  # trusted once the method has answered within its lexicon


async def test_validate_every_output_checks_after_a_good_answer_too(client):
    r = await client.get("/xrpc/io.example.echo?name=fine&n=1")
    assert r.status == 200
    r = await client.get("/xrpc/io.example.echo?name=bad-out")
    assert r.status == 500


async def test_the_test_suite_validates_every_output(settings, aiohttp_client):
    """The suite's settings fixture turns ENGRAM_VALIDATE_OUTPUT on, so every app a test builds from it
    checks every answer against its lexicon (off-lexicon output still fails tests)."""
    from engram.app import create_app
    from engram.app_keys import xrpc_key

    assert settings.validate_output is True
    client = await aiohttp_client(await create_app(settings))  # started, so its parts are closed after
    assert client.app[xrpc_key].validate_every_output is True


async def test_declared_error_passes_and_undeclared_is_a_500(client):
    r = await client.get("/xrpc/io.example.echo?name=declared")
    assert r.status == 400 and (await r.json())["error"] == "Declared"
    r = await client.get("/xrpc/io.example.echo?name=undecl")
    assert r.status == 500 and (await r.json())["error"] == "InternalServerError"


async def test_unexpected_exception_is_generic_500_without_details(client):
    r = await client.get("/xrpc/io.example.echo?name=boom")
    assert r.status == 500
    text = await r.text()
    assert "secret" not in text and "Traceback" not in text


async def test_rate_limited_numbers_are_rendered_as_headers(client):
    r = await client.get("/xrpc/io.example.echo?name=limited")
    assert r.status == 429
    assert (await r.json())["error"] == "RateLimitExceeded"
    assert r.headers["Retry-After"] == "1"  # whole seconds, rounded up
    limits = {k: r.headers[k] for k in ("RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset")}
    assert limits == {"RateLimit-Limit": "5", "RateLimit-Remaining": "0", "RateLimit-Reset": "7"}


async def test_procedure_body_is_read_only_after_auth_accepts(client):
    # A refused caller gets its 401 before the body is read: not 413 for a body over the limit...
    big = {"text": "x" * 5000}
    r = await client.post("/xrpc/io.example.putAfterAuth", json=big)
    assert r.status == 401 and (await r.json())["error"] == "AuthRequired"
    assert client.behaviour["header_auth_saw_body"] is None
    # ...while an accepted one does reach the body (and its limit).
    r = await client.post("/xrpc/io.example.putAfterAuth", json=big, headers={"Authorization": "Bearer ok"})
    assert r.status == 413
    ok = {"Authorization": "Bearer ok"}
    r = await client.post("/xrpc/io.example.putAfterAuth", json={"text": "hi"}, headers=ok)
    assert r.status == 200 and await r.json() == {"length": 2}


async def test_unknown_path_is_json_404(client):
    r = await client.get("/nothing/here")
    assert r.status == 404
    assert (await r.json())["error"] == "NotFound"


async def test_cors_preflight_and_exposed_headers(client):
    r = await client.options(
        "/xrpc/io.example.echo",
        headers={"Origin": "https://app.example", "Access-Control-Request-Method": "GET"},
    )
    assert r.status == 204
    assert r.headers["Access-Control-Allow-Origin"] == "*"
    assert "Signature-Input" in r.headers["Access-Control-Allow-Headers"]
    r = await client.get("/xrpc/io.example.echo?name=a")
    assert "Retry-After" in r.headers["Access-Control-Expose-Headers"]
