"""Schema-driven fuzz of each shim against the OpenAPI it serves: requests generated from the documented
request schemas (and junk beside them) never get a 500, and every documented answer matches its schema."""

from __future__ import annotations

import string

import jsonschema
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.compat import FACTS, bearer, start

from engram.compat.gptbots.openapi import openapi as gptbots_openapi
from engram.compat.sim.openapi import openapi as sim_openapi

SPECS = {"gptbots": gptbots_openapi(), "sim": sim_openapi()}
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=10,
)
WORDS = st.text(alphabet=string.ascii_letters + string.digits + " _-:", max_size=30)


def operations(spec: dict) -> list[tuple[str, str, dict]]:
    return [(path, method, op) for path, item in spec["paths"].items() for method, op in item.items()]


def request_strategy(spec: dict, path: str, method: str):
    """(method, url path, query params, JSON body or None): schemathesis cases generated from the
    operation's documented parameters and body, plus junk bodies beside them."""
    operation = schemathesis.openapi.from_dict(spec)[path][method]

    def transport(case) -> tuple:
        kwargs = case.as_transport_kwargs(base_url="")
        return kwargs["method"], kwargs["url"], kwargs.get("params") or {}, kwargs.get("json")

    documented = operation.as_strategy().map(transport)
    if "requestBody" not in spec["paths"][path][method]:
        return documented
    junk = st.tuples(
        st.just(method.upper()), st.just(path), st.just({}), st.dictionaries(WORDS, JSON, max_size=6) | JSON
    )
    return st.one_of(documented, documented, junk)


def check_answer(spec: dict, op: dict, status: int, payload) -> None:
    assert status < 500, payload
    documented = op["responses"].get(str(status))
    if documented is None:
        assert status in (404, 405, 413, 429), (status, payload)  # HTTP-level answers, in the shim's shape
        return
    schema = documented["content"]["application/json"]["schema"]
    jsonschema.validate(
        payload, {**schema, "components": spec["components"]}, cls=jsonschema.Draft202012Validator
    )


@pytest.fixture
async def shims(aiohttp_client, settings):
    from dataclasses import replace

    engram = await start(aiohttp_client, replace(settings, text_search_rate=1000.0, text_search_burst=1000))
    space = await engram.space("fuzz")
    await engram.write(space.uri, FACTS)
    token, _ = await engram.key(space.uri)
    return engram, token


async def test_the_served_descriptions_are_the_ones_fuzzed(shims):
    engram, _ = shims
    for name, spec in SPECS.items():
        assert await (await engram.client.get(f"/compat/{name}/openapi.json")).json() == spec


@pytest.mark.parametrize(
    ("name", "path", "method", "op"), [(n, *o) for n, spec in SPECS.items() for o in operations(spec)]
)
@settings(
    max_examples=20,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
async def test_generated_requests_never_500_and_answers_match_the_schema(shims, name, path, method, op, data):
    spec = SPECS[name]
    engram, token = shims
    verb, url, query, body = data.draw(request_strategy(spec, path, method))
    kwargs = {"params": query, "headers": bearer(token)}
    if body is not None:
        kwargs["json"] = body
    resp = await engram.client.request(verb, url, **kwargs)
    check_answer(spec, op, resp.status, await resp.json())
