"""The requests a cluster sends to a space's holder are the ones their doors declared when they registered
them (engram/space_scopes.py, docs/scale-out.md#forwarding): no second list to keep in step."""

from __future__ import annotations

from engram.app import create_app
from engram.app_keys import xrpc_key
from engram.space_scopes import space_scopes_key

SPACE_SCOPED = {
    # answered from the space's index, or acting on it
    "/xrpc/garden.engram.searchMemories",
    "/xrpc/garden.engram.listMemories",
    "/xrpc/garden.engram.getMemory",
    "/xrpc/garden.engram.getMemoryGraph",
    "/xrpc/garden.engram.getSpaceStatus",
    "/xrpc/garden.engram.exportSpace",
    "/xrpc/garden.engram.warmSpace",
    "/xrpc/garden.engram.recallMemories",
    "/xrpc/garden.engram.admin.reindexSpace",
    # a synced space is synced by its holder: its host's notifications go there
    "/xrpc/com.atproto.space.notifyWrite",
    "/xrpc/com.atproto.space.notifySpaceDeleted",
    # Memory Bank's searches, by their credential's space
    "/memorybank/query",
    "/memorybank/query-action",
}


async def test_the_doors_declare_the_space_scoped_requests(aiohttp_client, settings):
    client = await aiohttp_client(await create_app(settings))
    scopes = client.app[space_scopes_key]
    assert set(scopes) == SPACE_SCOPED
    # every declared XRPC path is a registered route that says so itself
    routes = client.app[xrpc_key].routes
    xrpc_paths = {p for p in scopes if p.startswith("/xrpc/")}
    assert {f"/xrpc/{nsid}" for nsid, route in routes.items() if route.space_scoped} == xrpc_paths
    assert scopes.get("/xrpc/garden.engram.searchMemories").label == "garden.engram.searchMemories"


async def test_the_declarations_find_the_space_before_auth(aiohttp_client, settings):
    """What the cluster routes on: the query's `space`, nothing for a request that names none (served where
    it arrived, where the usual error answers it). Procedures and Memory Bank: tests/cluster/test_three_nodes.py
    and test_shim_routing.py, through real nodes."""
    from aiohttp.test_utils import make_mocked_request

    client = await aiohttp_client(await create_app(settings))
    scopes = client.app[space_scopes_key]
    search = scopes.get("/xrpc/garden.engram.searchMemories")
    request = make_mocked_request("GET", "/xrpc/garden.engram.searchMemories?space=at%3A%2F%2Fdid%3Aplc%3Aa")
    assert await search.space_of(request) == "at://did:plc:a"
    assert await search.space_of(make_mocked_request("GET", "/xrpc/garden.engram.searchMemories")) is None
