"""`engram mcp` as a real stdio subprocess on a real data dir, driven by the SDK's stdio client; what it did
is then checked through the service layer on the same data dir (open_context, as the CLI does)."""

from __future__ import annotations

import logging
import os
import subprocess
import sys

import pytest
from mcp import Client, StdioServerParameters
from support.mcp import error_of, resource_json, result_of

from engram.cli.main import main
from engram.lifecycle import open_context
from engram.service import apikeys
from engram.service.search import SearchQuery
from engram.store import MemoryWrite

FACTS = [
    "Dana prefers pnpm over npm in the web-dashboard repository.",
    "Production Postgres runs version 16.2; staging is still on 15.4.",
]


def stdio(settings, *args: str, **extra_env: str) -> Client:
    env = {
        "ENGRAM_DATA_DIR": str(settings.data_dir),
        "ENGRAM_EMBEDDER": "hashing",
        "ENGRAM_SERVICE_DID": settings.service_did,
        "ENGRAM_PUBLIC_URL": settings.public_url,
        "ENGRAM_LOG_LEVEL": "warning",
    }
    if settings.database_url:  # the same store as the app under test (TEST_STORE_BACKEND=postgres)
        env["ENGRAM_DATABASE_URL"] = settings.database_url
    env.update(extra_env)
    return Client(StdioServerParameters(command=sys.executable, args=["-m", "engram", "mcp", *args], env=env))


@pytest.fixture
async def data_dir(settings):
    """A data dir with spaces `notes` (the key's primary), `shared` (also bound) and `private` (not)."""
    async with open_context(settings) as ctx:
        notes = await ctx.services.spaces.create_hosted("notes")
        shared = await ctx.services.spaces.create_hosted("shared")
        private = await ctx.services.spaces.create_hosted("private")
        author = settings.service_did
        await ctx.services.memories.write(
            shared.uri, [MemoryWrite(author=author, text="Lisbon trip in October.")]
        )
        [secret] = await ctx.services.memories.write(
            private.uri, [MemoryWrite(author=author, text="Postgres secret plan.")]
        )
        _, token = await apikeys.create_api_key(
            ctx.store, notes.uri, ["read", "write"], "agent", [shared.uri]
        )
    return settings, token, notes.uri, shared.uri, private.uri, secret.uri


async def test_engram_mcp_over_stdio_with_a_key(data_dir):
    settings, token, notes, shared, private, secret = data_dir
    async with stdio(settings, "--key", token) as client:
        made = [result_of(await client.call_tool("remember", {"text": t, "tags": ["team"]})) for t in FACTS]
        assert result_of(await client.call_tool("remember", {"text": FACTS[0]}))["duplicate"] is True
        recalled = result_of(
            await client.call_tool("recall", {"query": "postgres version", "mode": "vector"})
        )
        everywhere = result_of(await client.call_tool("recall", {"query": "Lisbon trip", "limit": 5}))
        got = result_of(await client.call_tool("get_memory", {"uri": made[0]["uri"]}))
        resource = resource_json(await client.read_resource(made[1]["uri"]))
        listed = result_of(await client.call_tool("list_memories", {"space": "notes"}))
        spaces = result_of(await client.call_tool("list_spaces", {}))["spaces"]
        forgot = result_of(await client.call_tool("forget", {"uri": made[0]["uri"]}))
        assert "MemoryNotFound" in error_of(await client.call_tool("get_memory", {"uri": secret}))
        assert "MemoryNotFound" in error_of(await client.call_tool("forget", {"uri": secret}))
    assert got["text"] == FACTS[0] and resource["text"] == FACTS[1]
    assert {s["uri"] for s in spaces} == {notes, shared}  # never `private`
    assert all(private not in r["uri"] for r in everywhere["results"])
    assert everywhere["results"][0]["text"] == "Lisbon trip in October."
    assert forgot == {"uri": made[0]["uri"], "deleted": True}

    async with open_context(settings) as ctx:  # what the subprocess did, seen through the service layer
        memories, _ = await ctx.services.memories.list(notes)
        assert [m.text for m in memories] == [FACTS[1]]
        assert {m["uri"] for m in listed["memories"]} == {made[0]["uri"], made[1]["uri"]}
        space = await ctx.services.spaces.find(notes)
        direct = await ctx.services.search.search(space, SearchQuery(q="postgres version"))
        assert recalled["results"][0]["uri"] == direct.hits[0][0].uri == made[1]["uri"]
        assert (await ctx.services.memories.get(private, secret)).text == "Postgres secret plan."


async def test_engram_mcp_without_a_key_is_the_operator_of_every_hosted_space(data_dir):
    settings, _, notes, shared, private, _ = data_dir
    async with stdio(settings) as client:
        spaces = result_of(await client.call_tool("list_spaces", {}))["spaces"]
        assert {s["uri"] for s in spaces} == {notes, shared, private} and all(s["write"] for s in spaces)
        assert "SpaceRequired" in error_of(await client.call_tool("remember", {"text": "where?"}))
        made = result_of(
            await client.call_tool("remember", {"text": "Filed under private.", "space": "private"})
        )
        hits = result_of(await client.call_tool("recall", {"query": "Postgres secret", "limit": 3}))
    assert made["uri"].startswith(private + "/")
    assert hits["results"][0]["text"] == "Postgres secret plan."


def test_a_bad_key_fails_at_start_up(settings, monkeypatch, capsys):
    for name, value in {"ENGRAM_DATA_DIR": str(settings.data_dir), "ENGRAM_EMBEDDER": "hashing"}.items():
        monkeypatch.setenv(name, value)
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    try:
        assert main(["mcp", "--key", "engram_not-a-key"]) == 1
    finally:  # `engram mcp` sets up engram's JSON logging on the root logger: leave pytest's in place
        root.handlers[:] = handlers
        root.setLevel(level)
    captured = capsys.readouterr()
    assert "InvalidApiKey" in captured.err and captured.out == ""
    assert str(settings.data_dir.resolve()) in captured.err and "ENGRAM_DATA_DIR" in captured.err  # where


def test_a_keyed_session_without_a_data_dir_says_where_it_looked_and_creates_nothing(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("ENGRAM_")} | {
        "ENGRAM_EMBEDDER": "hashing"
    }
    proc = subprocess.run(
        [sys.executable, "-m", "engram", "mcp", "--key", "engram_some-key"],
        check=False,
        cwd=tmp_path,  # a host's working directory
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 1 and proc.stdout == ""
    assert str(tmp_path / "engram-data") in proc.stderr and "ENGRAM_DATA_DIR" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert list(tmp_path.iterdir()) == []  # no ./engram-data made in the host's directory


async def test_the_host_is_answered_before_the_model_loads(data_dir):
    """initialize and tools/list never wait for the embedding model: with one that cannot load at all,
    the host still connects and lists the tools, and a tool call says what is wrong."""
    settings, token, *_ = data_dir
    missing = "onnx:" + str(settings.data_dir / "no-such-model")
    async with stdio(settings, "--key", token, ENGRAM_EMBEDDER=missing) as client:
        assert "recall" in {t.name for t in (await client.list_tools()).tools}
        refused = error_of(await client.call_tool("recall", {"query": "anything"}))
        assert refused.startswith("EmbedderUnavailable: the embedding model did not load")


async def test_engram_mcp_url_forwards_every_call_to_a_remote_engram(served):
    notes, other = await served.space("notes"), await served.space("other")
    token, _ = await served.key(notes)
    await served.write(other, ["Not this key's business."])
    env = {"ENGRAM_LOG_LEVEL": "warning", "ENGRAM_DATA_DIR": str(served.ctx.settings.data_dir) + "-unused"}
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "engram", "mcp", "--url", served.base, "--key", token], env=env
    )
    async with Client(params) as client:
        made = result_of(await client.call_tool("remember", {"text": FACTS[1], "tags": ["ops"]}))
        hits = result_of(await client.call_tool("recall", {"query": "postgres version", "tags": ["ops"]}))
        got = result_of(await client.call_tool("get_memory", {"uri": made["uri"]}))
        resource = resource_json(await client.read_resource(made["uri"]))
        listed = result_of(await client.call_tool("list_memories", {}))
        spaces = result_of(await client.call_tool("list_spaces", {}))["spaces"]
        refused = error_of(await client.call_tool("list_memories", {"space": "other"}))
        forgot = result_of(await client.call_tool("forget", {"uri": made["uri"]}))
    assert made["uri"].startswith(notes + "/") and hits["results"][0]["uri"] == made["uri"]
    assert got["text"] == resource["text"] == FACTS[1] and listed["memories"][0]["uri"] == made["uri"]
    assert [s["uri"] for s in spaces] == [notes]
    assert refused.startswith("UnknownSpace: 'other'")  # the model reads `Name: message`, nothing else
    assert forgot["deleted"] is True and (await served.ctx.services.memories.list(notes))[0] == []


def test_every_line_a_host_sends_gets_an_answer_even_a_malformed_one(data_dir):
    """JSON-RPC 2.0 section 5: a line that is not JSON is -32700, one that is not a request MCP takes
    (a batch, jsonrpc 1.0, an object as id) -32600, each with a null id; the session goes on."""
    import orjson

    settings = data_dir[0]
    env = {k: v for k, v in os.environ.items() if not k.startswith("ENGRAM_")} | {
        "ENGRAM_DATA_DIR": str(settings.data_dir), "ENGRAM_EMBEDDER": "hashing",
        "ENGRAM_SERVICE_DID": settings.service_did, "ENGRAM_PUBLIC_URL": settings.public_url,
        "ENGRAM_LOG_LEVEL": "warning",
    }  # fmt: skip
    if settings.database_url:
        env["ENGRAM_DATABASE_URL"] = settings.database_url
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}  # fmt: skip
    lines = [
        orjson.dumps(init),
        orjson.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        b"{nope",
        orjson.dumps([{"jsonrpc": "2.0", "id": 2, "method": "ping"}]),
        orjson.dumps({"jsonrpc": "1.0", "id": 3, "method": "ping"}),
        orjson.dumps({"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"}),
        orjson.dumps({"jsonrpc": "2.0", "id": 4, "method": "ping"}),
    ]
    # as a host does: stdin stays open while it waits for its answers (at EOF the SDK stops the session)
    proc = subprocess.Popen(
        [sys.executable, "-m", "engram", "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL, env=env,
    )  # fmt: skip
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(b"\n".join(lines) + b"\n")
        proc.stdin.flush()
        raw = [proc.stdout.readline() for _ in range(6)]  # one answer per line but the notification
    finally:
        proc.stdin.close()
        proc.wait(timeout=120)
        proc.stdout.close()
    answers = [orjson.loads(line) for line in raw]
    errors = sorted((a["id"] is None, a["error"]["code"]) for a in answers if "error" in a)
    assert errors == [(False, -32600), (True, -32700), (True, -32600), (True, -32600)], answers
    assert sorted(a["id"] for a in answers if "result" in a) == [1, 4]  # initialize, then the last ping
    assert all(b"nope" not in line for line in raw)
