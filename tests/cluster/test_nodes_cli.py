"""`engram nodes` over a real PostgreSQL holding two nodes' registrations and leases."""

from __future__ import annotations

import json
import os

import psycopg
import pytest

from engram.cli.main import main
from engram.cluster import leases


@pytest.fixture
async def two_nodes(pg_database_url, monkeypatch):
    async with await psycopg.AsyncConnection.connect(pg_database_url, autocommit=True) as conn:
        await leases.heartbeat(conn, "node-a", "http://10.0.0.1:8080")
        await leases.heartbeat(conn, "node-b", "http://10.0.0.2:8080")
        for i in range(3):
            assert await leases.acquire(conn, f"at://did:plc:x/garden.engram.space/a{i}", "node-a", 60_000)
        assert await leases.acquire(conn, "at://did:plc:x/garden.engram.space/b0", "node-b", 60_000)
        await leases.release(conn, "node-b", ["at://did:plc:x/garden.engram.space/b0"])
    for name in [k for k in os.environ if k.startswith("ENGRAM_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("ENGRAM_DATABASE_URL", pg_database_url)


def test_nodes_lists_each_node_its_state_and_its_space_count(two_nodes, capsys):
    assert main(["nodes", "--spaces"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].split() == ["NODE", "URL", "STATE", "LAST", "SEEN", "SPACES"]
    a = next(line for line in lines if line.startswith("node-a"))
    b = next(line for line in lines if line.startswith("node-b"))
    assert "http://10.0.0.1:8080" in a and " live " in a and a.rstrip().endswith("3")
    assert b.rstrip().endswith("0")
    assert "3 space leases held, 1 lapsed" in out
    assert any(
        line.startswith("at://did:plc:x/garden.engram.space/b0  node-b") and "lapsed" in line
        for line in lines
    )


def test_nodes_as_json(two_nodes, capsys):
    assert main(["nodes", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [(n["id"], n["live"], n["spaces"]) for n in report["nodes"]] == [
        ("node-a", True, 3),
        ("node-b", True, 0),
    ]
    assert report["leases"] is None  # only with --spaces


def test_nodes_without_a_database_says_what_to_set(monkeypatch, capsys):
    monkeypatch.delenv("ENGRAM_DATABASE_URL", raising=False)
    assert main(["nodes"]) == 2
    assert "ENGRAM_DATABASE_URL" in capsys.readouterr().err
