"""ENGRAM_PROCESSES: several `engram serve` processes on one port over one data directory
(engram/serving/processes.py, docs/internals.md#using-every-core)."""

import asyncio
import os
import sys
from dataclasses import replace
from pathlib import Path

import aiohttp
import pytest
from support.engram_process import free_port, listeners, start_engram, stop
from support.hosted_reader import hosted_reader_headers

from engram.affinity import share_of, usable_cores
from engram.auth.admin_signature import sign_admin_request
from engram.auth.crypto_keys import PrivateKey
from engram.auth.identity import save_operator_key
from engram.config import Settings, read_env
from engram.lifecycle import open_context
from engram.search.vectors import encode_query_vector
from engram.serving.processes import settings_for_process
from engram.store import MemoryWrite


def test_each_process_gets_a_share_of_the_limits_that_sums_to_the_budget():
    settings = Settings(
        processes=4, search_rate=50.0, search_burst=100, text_search_rate=2.0, metrics_port=9100
    )
    shares = [settings_for_process(settings, i) for i in range(4)]
    assert sum(s.search_rate for s in shares) == pytest.approx(50.0)
    assert sum(s.search_burst for s in shares) == 100
    assert sum(s.text_search_rate for s in shares) == pytest.approx(2.0)
    assert sum(s.max_connections for s in shares) <= settings.max_connections
    assert sum(s.ram_bytes for s in shares) <= settings.ram_bytes  # each process holds its own indexes
    assert sum(s.hit_cache_bytes for s in shares) <= settings.hit_cache_bytes  # per-process hit caches
    assert [s.metrics_port for s in shares] == [9100, 0, 0, 0]  # one metrics listener
    assert [s.process_index for s in shares] == [0, 1, 2, 3]  # process 0 alone polls synced spaces


async def _until(condition, what: str, timeout: float = 60.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out waiting for: {what}")
        await asyncio.sleep(0.05)


def _two_process_env(data_dir: Path, **extra: str):
    """`engram serve` settings for two serving processes over `data_dir`, by port (start_engram picks it)."""
    base_env = {k: v for k, v in os.environ.items() if not k.startswith("ENGRAM_")}

    def env(port: int) -> dict[str, str]:
        return base_env | {
            "ENGRAM_DATA_DIR": str(data_dir),
            "ENGRAM_EMBEDDER": "hashing",
            "ENGRAM_PORT": str(port),
            "ENGRAM_PUBLIC_URL": f"http://127.0.0.1:{port}",
            "ENGRAM_PROCESSES": "2",
            "ENGRAM_LOG_LEVEL": "warning",
            **extra,
        }

    return env


def _serving_children_cores(parent: int) -> list[frozenset[int]]:
    """The CPU affinity of each serving process `parent` spawned (not multiprocessing's resource tracker)."""
    children = Path(f"/proc/{parent}/task/{parent}/children").read_text().split()
    serving = [
        pid for pid in map(int, children) if b"spawn_main" in Path(f"/proc/{pid}/cmdline").read_bytes()
    ]
    return sorted((frozenset(os.sched_getaffinity(pid)) for pid in serving), key=min)


def _pinned_shares() -> list[frozenset[int]]:
    """What two pinned serving processes run on here: a core (or slice) each where this machine has the
    cores and no quota below them (engram/affinity.py), else every core, both."""
    mask = sorted(os.sched_getaffinity(0))
    if usable_cores() < len(mask) or len(mask) < 2:
        return [frozenset(mask)] * 2
    return [share for i in range(2) if (share := share_of(i, 2, mask)) is not None]


async def test_two_processes_share_the_port_and_every_write_reaches_both_views(tmp_path):
    data_dir = tmp_path / "data"
    env = _two_process_env(data_dir, ENGRAM_SEARCH_RATE="0", ENGRAM_LOAD_WAIT_MS="10000")

    proc, port = start_engram([sys.executable, "-m", "engram", "serve"], env, tmp_path / "serve.log")
    try:
        # start_engram returns once one process answers /_health; the other may still be starting.
        await _until(lambda: listeners(port) == 2, "both serving processes listen")
        # Each serving process runs on its own share of the cores (ENGRAM_PIN_PROCESSES' default)
        assert _serving_children_cores(proc.pid) == _pinned_shares()
        # A third process (this one) writes to the same data directory while both servers run.
        async with open_context(read_env(env(port))) as ctx:
            space = await ctx.services.spaces.create_hosted("shared")
            headers = hosted_reader_headers(ctx, space)
            active = space.config.active
            author = ctx.settings.service_did
            url = f"http://127.0.0.1:{port}/xrpc/garden.engram.searchMemories"
            for i in range(12):
                text = f"fact number {i}: the {['red', 'blue', 'green'][i % 3]} build server is {i * 7} years old"
                await ctx.services.memories.write(space.uri, [MemoryWrite(author=author, text=text)])
                vector = ctx.embedder.embed([text], "query")[0]
                params = {
                    "space": space.uri,
                    "vector": encode_query_vector(vector),
                    "model": active.model,
                    "modelDigest": active.digest,
                    "limit": "1",
                }
                # A fresh connection each time, so the kernel spreads them over both processes: whichever
                # answers must already see the write (it compares the space's store generation).
                async with (
                    aiohttp.ClientSession() as session,
                    session.get(url, params=params, headers=headers) as r,
                ):
                    body = await r.json()
                assert r.status == 200, body
                assert body["memories"][0]["text"] == text
    finally:
        stop(proc)
    assert proc.returncode == 0  # SIGTERM to the parent stops both children gracefully


async def test_a_signed_admin_request_is_accepted_once_across_processes(tmp_path):
    """The admin nonce is claimed in the store (engram/store/replays.py): the same signed request sent on
    many fresh connections, which the kernel spreads over both processes, succeeds exactly once."""
    data_dir = tmp_path / "data"
    ops_did, ops_key = "did:plc:multiprocadmin00000000000", PrivateKey.generate("ES256")
    save_operator_key(data_dir, ops_did, ops_key)  # engram holds the key, so the DID resolves offline
    env = _two_process_env(data_dir, ENGRAM_ADMIN_DIDS=ops_did, ENGRAM_PIN_PROCESSES="0")

    proc, port = start_engram([sys.executable, "-m", "engram", "serve"], env, tmp_path / "serve.log")
    try:
        await _until(lambda: listeners(port) == 2, "both serving processes listen")
        # Unpinned, every process may run on every core
        assert _serving_children_cores(proc.pid) == [frozenset(os.sched_getaffinity(0))] * 2
        path = "/xrpc/garden.engram.admin.listSpaces"
        headers = sign_admin_request(ops_key, ops_did, "GET", f"http://127.0.0.1:{port}{path}")
        answers = []
        for _ in range(16):
            async with (
                aiohttp.ClientSession() as session,
                session.get(f"http://127.0.0.1:{port}{path}", headers=headers) as r,
            ):
                answers.append((r.status, (await r.json()).get("error")))
    finally:
        stop(proc)
    assert answers.count((200, None)) == 1, answers
    assert answers.count((401, "BadAdminSignature")) == 15, answers


async def test_the_metrics_listener_counts_the_requests_of_every_process(tmp_path):
    metrics_port = free_port()
    env = _two_process_env(tmp_path / "data", ENGRAM_METRICS_PORT=str(metrics_port))

    proc, port = start_engram([sys.executable, "-m", "engram", "serve"], env, tmp_path / "serve.log")
    try:
        await _until(lambda: listeners(port) == 2, "both serving processes listen")
        for _ in range(20):  # fresh connections: the kernel spreads them over both processes
            async with (
                aiohttp.ClientSession() as session,
                session.get(f"http://127.0.0.1:{port}/.well-known/did.json") as r,
            ):
                assert r.status == 200
        async with (
            aiohttp.ClientSession() as session,
            session.get(f"http://127.0.0.1:{metrics_port}/metrics") as r,
        ):
            scraped = await r.text()
    finally:
        stop(proc)
    counted = [
        float(line.rsplit(" ", 1)[1])
        for line in scraped.splitlines()
        if line.startswith("engram_http_requests_total{") and 'route="/.well-known/did.json"' in line
    ]
    assert counted == [20.0], scraped  # one series, summed over both processes


@pytest.mark.parametrize(("index", "polls"), [(0, True), (1, False)])
async def test_only_the_first_process_polls_synced_spaces(settings, index, polls):
    async with open_context(replace(settings, processes=2, process_index=index), network=True) as ctx:
        assert ctx.syncer is not None  # every process answers notifications and admin calls
        running = {task.get_name() for task in asyncio.all_tasks()}
        assert ("sync poll" in running) is polls
