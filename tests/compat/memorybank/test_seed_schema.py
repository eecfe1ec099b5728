"""schemathesis with the seed's own OpenAPI (tests/compat/memorybank/fixtures/seed_openapi.json) and with the schema
engram serves, against the real app on a real port: every generated request, positive and negative, goes
over HTTP as schemathesis sends it, and every answer passes all of schemathesis' checks (no 5xx, a
documented status, content type and body schema, negative data rejected, positive data accepted)."""

from __future__ import annotations

import asyncio
import os
from dataclasses import replace
from pathlib import Path

import jsonschema
import orjson
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.core.failures import AcceptedNegativeData, FailureGroup
from schemathesis.openapi.checks import RejectedPositiveData

from engram.app import create_app
from engram.app_keys import context_key
from engram.compat.memorybank.routes import openapi_document
from engram.service.apikeys import create_api_key

SEED = orjson.loads((Path(__file__).parent / "fixtures" / "seed_openapi.json").read_bytes())
SCHEMAS = {"seed": SEED, "served": openapi_document("/memorybank")}
OPERATIONS = [(name, path) for name, spec in SCHEMAS.items() for path in spec["paths"]]


@pytest.fixture
async def engram(aiohttp_server, settings):
    app = await create_app(replace(settings, text_search_rate=10_000.0, text_search_burst=10_000))
    server = await aiohttp_server(app)
    ctx = server.app[context_key]
    space = await ctx.services.spaces.create_hosted("seed-schema")
    _, token = await create_api_key(ctx.store, space.uri, ["read", "write"], "schemathesis")
    return f"http://127.0.0.1:{server.port}/memorybank", token


def test_the_fixture_is_the_seeds_schema_and_engram_serves_the_same_operations():
    served = SCHEMAS["served"]
    assert SEED["info"]["title"] == "Memory Bank API" and SEED["servers"] == [{"url": "/memorybank"}]
    assert {p: list(op) for p, op in SEED["paths"].items()} == {
        p: list(op) for p, op in served["paths"].items()
    }
    for name, schema in SEED["components"]["schemas"].items():  # engram's adds descriptions, not fields
        mine = served["components"]["schemas"][name]
        assert (mine.get("required"), list(mine.get("properties", {}))) == (
            schema.get("required"),
            list(schema.get("properties", {})),
        ), name
    for path in SEED["paths"]:
        seed_op, served_op = SEED["paths"][path]["post"], served["paths"][path]["post"]
        assert seed_op["operationId"] == served_op["operationId"]
        assert seed_op["security"] == [{"OAuth2": ["write:documents"]}]
        assert seed_op["security"][0] in served_op["security"]  # engram's query also takes read:documents


@pytest.mark.parametrize(("name", "path"), OPERATIONS)
@settings(
    max_examples=int(os.environ.get("SEED_SCHEMA_EXAMPLES", "75")),
    deadline=None,
    derandomize=True,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.filter_too_much,
    ],
)
@given(data=st.data())
async def test_every_generated_request_passes_every_check(engram, name, path, data):
    base, token = engram
    operation = schemathesis.openapi.from_dict(SCHEMAS[name])[path]["POST"]
    case = data.draw(operation.as_strategy(generation_mode=data.draw(st.sampled_from(list(GenerationMode)))))
    headers = {"Authorization": f"Bearer {token}"}
    # schemathesis' transport is synchronous (requests); the server runs on this loop, so call from a thread
    response = await asyncio.to_thread(case.call, base_url=base, headers=headers)
    try:
        await asyncio.to_thread(case.validate_response, response, headers=headers)
    except FailureGroup as group:
        failures = [
            f
            for f in group.exceptions
            if not is_engram_limit(f, response) and not is_pydantic1_lenience(f, name, path, case)
        ]
        if failures:
            raise FailureGroup(failures, group.message) from None


# engram's documented bounds (docs/memorybank.md "Limits", "Queries"): schema-valid requests the seed sets
# no bound for, refused with a 422 naming the field's limit or a 413. Only these may reject valid data.
LIMIT_TYPES = {
    "value_error.list.max_items",  # 16 queries per request, 1000 ids per delete
    "value_error.number.not_gt",  # top_k of 0 or less
    "value_error.any_str.max_length",  # ids, user_id, metadata fields, query text
    "value_error.datetime",  # a filter date arrow cannot read (upstream silently used "now")
    "value_error.str.nul",  # U+0000 in a stored field, which engram's store cannot hold
}


def lenient(schema):
    """The schema as pydantic 1 (upstream's validator) reads bodies: a number is taken where a string is
    expected, an integral float or a numeric string where an integer is, and an optional field may be
    null (docs/memorybank.md "Errors")."""
    if isinstance(schema, list):
        return [lenient(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: lenient(v) for k, v in schema.items()}
    kind = out.pop("type", None)
    if kind == "string":
        out["anyOf"] = [
            {"type": "string", **({"enum": out.pop("enum")} if "enum" in out else {})},
            {"type": "number"},
        ]
    elif kind == "integer":
        out["anyOf"] = [
            {"type": "number", "multipleOf": 1},
            {"type": "string", "pattern": r"^\s*[+-]?\d+\s*$"},
        ]
    elif kind is not None:
        out["type"] = kind
    if kind == "object" and "properties" in out:
        required = set(out.get("required", ()))
        out["properties"] = {
            k: v if k in required else {"anyOf": [v, {"type": "null"}]} for k, v in out["properties"].items()
        }
    return out


def is_pydantic1_lenience(failure, name: str, path: str, case) -> bool:
    """An accepted "schema-violating" body that pydantic 1 accepted upstream too (see `lenient`)."""
    if not isinstance(failure, AcceptedNegativeData) or not isinstance(case.body, dict):
        return False
    spec = SCHEMAS[name]
    body_schema = spec["paths"][path]["post"]["requestBody"]["content"]["application/json"]["schema"]
    schema = lenient({**body_schema, "components": spec["components"]})
    return jsonschema.Draft4Validator(schema).is_valid(case.body)


def is_engram_limit(failure, response) -> bool:
    if not isinstance(failure, RejectedPositiveData):
        return False
    if response.status_code == 413:
        return True
    detail = response.json().get("detail") if response.status_code == 422 else None
    return isinstance(detail, list) and bool(detail) and all(d["type"] in LIMIT_TYPES for d in detail)
