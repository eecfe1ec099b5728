"""Readers signed in with an API key see their key's space, read-only, and nothing of any other space."""

from __future__ import annotations

import pytest

from engram.service import apikeys


async def test_reader_sees_only_the_keys_space(console):
    alpha = await console.reader(console.alpha_read)
    page = await (await alpha.get("/console/")).text()
    assert "alpha" in page and console.alpha in page
    assert console.beta not in page and "beta" not in page
    assert "API key" in page and "alpha reader" in page and "(read)" in page  # who, with which scopes
    assert 'href="/console/keys"' not in page  # no operator navigation


@pytest.mark.parametrize(
    "path,params",
    [
        ("/console/space", lambda c: {"space": c.beta}),
        ("/console/space", lambda c: {"space": c.beta, "q": "vault combination"}),
        ("/console/memory", lambda c: {"space": c.beta, "uri": c.beta_uris[0]}),
        ("/console/memory", lambda c: {"space": c.alpha, "uri": c.beta_uris[0]}),  # B's memory via A
        ("/console/graph", lambda c: {"space": c.beta}),
        ("/console/graph.json", lambda c: {"space": c.beta}),
    ],
)
async def test_key_for_a_sees_nothing_of_b(console, path, params):
    alpha = await console.reader(console.alpha_read)
    resp = await alpha.get(path, params(console))
    assert resp.status == 404
    body = await resp.text()
    assert "vault" not in body and "launch" not in body and "beta secret" not in body


async def test_another_space_looks_exactly_like_no_space(console):
    alpha = await console.reader(console.alpha_read)
    hidden = await alpha.get("/console/space", {"space": console.beta})
    missing = await alpha.get("/console/space", {"space": console.beta.replace("/beta", "/gamma")})
    assert hidden.status == missing.status == 404
    assert (await hidden.text()).replace("beta", "X") == (await missing.text()).replace("gamma", "X")


async def test_key_for_b_reads_b_and_not_a(console):
    beta = await console.reader(console.beta_read)
    own = await beta.get("/console/space", {"space": console.beta})
    assert own.status == 200 and "vault combination" in await own.text()
    assert (await beta.get("/console/space", {"space": console.alpha})).status == 404


async def test_readers_cannot_manage_keys(console):
    alpha = await console.reader(console.alpha_read)
    csrf = await alpha.csrf()
    assert (await alpha.get("/console/keys")).status == 403
    created = await alpha.post("/console/keys", {"csrf": csrf, "space": console.alpha, "scope": "write"})
    assert created.status == 403 and "engram_" not in (await created.text()).replace("engram_console", "")
    revoked = await alpha.post("/console/keys/revoke", {"csrf": csrf, "id": "3"})
    assert revoked.status == 403
    keys = await apikeys.list_api_keys(console.ctx.store)
    assert len(keys) == 3 and all(k.revoked_at is None for k in keys)


async def test_write_only_key_cannot_sign_in(console):
    browser = console.browser()
    resp = await browser.sign_in_key(console.alpha_write_only)
    assert resp.status == 403 and "MissingScope" in await resp.text()
    assert "engram_console" not in browser.cookies


async def test_unknown_or_revoked_key_cannot_sign_in(console):
    for token in ("engram_not-a-real-key", "", "x" * 500):
        resp = await console.browser().sign_in_key(token)
        assert resp.status == 401 and "InvalidApiKey" in await resp.text()
    key = next(k for k in await apikeys.list_api_keys(console.ctx.store) if k.label == "beta reader")
    await apikeys.revoke_api_key(console.ctx.store, key.id)
    assert (await console.browser().sign_in_key(console.beta_read)).status == 401


async def test_revoking_a_key_ends_its_sessions(console):
    alpha = await console.reader(console.alpha_read)
    assert (await alpha.get("/console/space", {"space": console.alpha})).status == 200
    operator = await console.operator()
    key = next(k for k in await apikeys.list_api_keys(console.ctx.store) if k.label == "alpha reader")
    resp = await operator.post("/console/keys/revoke", {"csrf": await operator.csrf(), "id": str(key.id)})
    assert resp.status == 303
    assert (await alpha.get("/console/space", {"space": console.alpha})).status == 303
    assert (await alpha.get("/console/graph.json", {"space": console.alpha})).status == 401


async def test_revoked_elsewhere_still_ends_the_session(console):
    """Revoked by the CLI (another process): the next request re-reads the key and finds it dead."""
    alpha = await console.reader(console.alpha_read)
    key = next(k for k in await apikeys.list_api_keys(console.ctx.store) if k.label == "alpha reader")
    await apikeys.revoke_api_key(console.ctx.store, key.id)
    assert (await alpha.get("/console/")).status == 303


async def test_deleting_the_space_ends_its_readers_sessions(console):
    alpha = await console.reader(console.alpha_read)
    await console.ctx.services.spaces.delete(console.alpha)
    assert (await alpha.get("/console/")).status == 303


async def test_operator_sees_every_space(console):
    operator = await console.operator()
    page = await (await operator.get("/console/")).text()
    assert console.alpha in page and console.beta in page
    resp = await operator.get("/console/space", {"space": console.beta})
    assert resp.status == 200 and "vault combination" in await resp.text()
