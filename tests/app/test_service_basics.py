"""The real service on a real port: health, did.json, describeService, routing of every lexicon method."""

from __future__ import annotations

import logging

import pytest

from engram.app import create_app
from engram.app_keys import context_key, xrpc_key
from engram.logs import AccessLogger, redact_query

# Lexicon methods that are routed but not built yet. This list may only shrink.
UNBUILT: set[str] = set()


@pytest.fixture
async def client(aiohttp_client, settings):
    return await aiohttp_client(await create_app(settings))


async def test_health_reports_version(client):
    r = await client.get("/xrpc/_health")
    assert r.status == 200
    assert await r.json() == {"version": "0.1.0"}


async def test_every_503_says_when_to_retry(client):
    """NotReady has no retry hint of its own: the error middleware adds Retry-After to any 503."""
    ctx = client.server.app[context_key]
    ctx.ready = False
    try:
        r = await client.get("/xrpc/_health")
        assert (r.status, (await r.json())["error"], r.headers.get("Retry-After")) == (503, "NotReady", "1")
    finally:
        ctx.ready = True


async def test_did_document_names_the_service_and_its_endpoints(client, settings):
    r = await client.get("/.well-known/did.json")
    assert r.status == 200
    doc = await r.json()
    assert doc["id"] == settings.service_did
    services = {s["id"]: s for s in doc["service"]}
    assert services["#atproto_space_syncer"]["type"] == "AtprotoSpaceSyncer"
    assert services["#atproto_space_syncer"]["serviceEndpoint"] == settings.public_url
    assert "#engram" in services


async def test_describe_service_needs_no_auth(client, settings):
    r = await client.get("/xrpc/garden.engram.describeService")
    assert r.status == 200
    body = await r.json()
    assert body["did"] == settings.service_did


async def test_every_lexicon_method_is_routed(client):
    xrpc = client.app[xrpc_key]
    assert xrpc.unbuilt() == UNBUILT
    for nsid, method in xrpc.registry.methods().items():
        verb = client.get if method.kind == "query" else client.post
        r = await verb(f"/xrpc/{nsid}")
        body = await r.json()
        assert set(body) >= ({"error", "message"} if r.status >= 400 else set()), nsid
        if nsid in UNBUILT:
            assert r.status == 501 and body["error"] == "MethodNotImplemented"
        else:
            assert r.status != 501, f"{nsid} is built but answered 501"


async def test_unknown_method_is_501(client):
    r = await client.get("/xrpc/garden.engram.noSuchThing")
    assert r.status == 501
    assert (await r.json())["error"] == "MethodNotImplemented"


def test_access_log_redacts_query_text_and_vectors():
    assert redact_query("space=at%3A%2F%2Fx&q=my+secret&vector=AAAA&limit=3") == (
        "space=at%3A%2F%2Fx&q=%5Bredacted%5D&vector=%5Bredacted%5D&limit=3"
    )


async def test_access_log_line_has_no_query_text(aiohttp_server, aiohttp_client, settings, caplog):
    app = await create_app(settings)
    server = await aiohttp_server(
        app, access_log_class=AccessLogger, access_log=logging.getLogger("engram.access")
    )
    client = await aiohttp_client(server)
    with caplog.at_level(logging.INFO, logger="engram.access"):
        await client.get("/xrpc/garden.engram.describeService?q=top-secret-words&vector=QUJD")
    logged = " ".join(str(getattr(r, "fields", "")) + r.getMessage() for r in caplog.records)
    assert "describeService" in logged
    assert "top-secret-words" not in logged and "QUJD" not in logged


def test_readme_lists_every_xrpc_method(client):
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    missing = []
    for nsid in client.app[xrpc_key].registry.methods():
        name = nsid.rsplit(".", 1)[1]
        listed = f"`{nsid}`" in readme or (nsid.startswith("garden.engram.admin.") and name in readme)
        if not listed:
            missing.append(nsid)
    assert missing == []


async def test_prometheus_metrics_on_their_own_port(aiohttp_client, settings):
    import errno

    from support.engram_process import free_port

    from engram.config import override

    for attempt in range(5):  # a port found free may be taken by another process before the app binds it
        port = free_port()
        try:
            client = await aiohttp_client(await create_app(override(settings, metrics_port=port)))
            break
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE or attempt == 4:
                raise
    await client.get("/xrpc/garden.engram.describeService")
    await client.get("/xrpc/garden.engram.noSuchMethod")
    metrics = await client.session.get(f"http://127.0.0.1:{port}/metrics")
    text = await metrics.text()
    assert 'engram_http_requests_total{route="garden.engram.describeService",status="200"} 1.0' in text
    assert 'engram_http_requests_total{route="other",status="501"} 1.0' in text
    assert 'engram_search_hit_cache_lookups_total{result="hit"} 0.0' in text  # engram/store/hit_cache.py
    assert "engram_search_hit_cache_bytes 0.0" in text
    assert 'engram_search_batch_searches_total{run="scan"} 0.0' in text  # engram/search/search_job.py
    assert "engram_search_batched_scans_total 0.0" in text
    assert 'engram_search_split_scans_total{second_half="worker"} 0.0' in text  # engram/search/split_scan.py
    assert 'engram_search_split_scans_total{second_half="taken_back"} 0.0' in text
    assert (await client.get("/metrics")).status == 404  # never on the public port
