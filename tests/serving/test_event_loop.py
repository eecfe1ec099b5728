"""ENGRAM_EVENT_LOOP: a real `engram serve` on uvloop and on asyncio answers a signed search the same way
(engram/serving/event_loop.py). The rest of the suite runs the app on pytest's default asyncio loop."""

import json
import os
import platform
import sys

import aiohttp
import pytest
from support.engram_process import start_engram, stop
from support.hosted_reader import hosted_reader_headers

from engram.config import read_env
from engram.lifecycle import open_context
from engram.search.vectors import encode_query_vector
from engram.store import MemoryWrite

TEXTS = ["the red build server is old", "lunch is at noon on fridays", "the deploy key rotates monthly"]


async def _seed(env: dict[str, str]) -> tuple[str, dict[str, str], dict[str, str]]:
    """A hosted space with three memories, signed headers for it, and search params for TEXTS[2]."""
    async with open_context(read_env(env)) as ctx:
        space = await ctx.services.spaces.create_hosted("loops")
        author = ctx.settings.service_did
        await ctx.services.memories.write(space.uri, [MemoryWrite(author=author, text=t) for t in TEXTS])
        headers = hosted_reader_headers(ctx, space)
        active = space.config.active
        params = {
            "space": space.uri,
            "vector": encode_query_vector(ctx.embedder.embed([TEXTS[2]], "query")[0]),
            "model": active.model,
            "modelDigest": active.digest,
            "limit": "2",
        }
    return space.uri, headers, params


def _ready_line(log_text: str) -> dict:
    for line in log_text.splitlines():
        if line.startswith("{") and json.loads(line).get("msg") == "engram ready":
            return json.loads(line)
    raise AssertionError(f"no 'engram ready' line in:\n{log_text}")


@pytest.mark.parametrize("event_loop", ["uvloop", "asyncio"])
@pytest.mark.parametrize("processes", [1, 2])
async def test_engram_serve_answers_a_signed_search_on_each_event_loop(tmp_path, event_loop, processes):
    base_env = {k: v for k, v in os.environ.items() if not k.startswith(("ENGRAM_", "MALLOC_"))}

    def env(port: int) -> dict[str, str]:
        return base_env | {
            "ENGRAM_DATA_DIR": str(tmp_path / "data"),
            "ENGRAM_EMBEDDER": "hashing",
            "ENGRAM_PORT": str(port),
            "ENGRAM_PUBLIC_URL": f"http://127.0.0.1:{port}",
            "ENGRAM_SERVICE_DID": "did:web:loops.test",
            "ENGRAM_EVENT_LOOP": event_loop,
            "ENGRAM_PROCESSES": str(processes),  # 2: SO_REUSEPORT and spawned children on this loop too
            "ENGRAM_LOAD_WAIT_MS": "10000",
            "ENGRAM_LOG_LEVEL": "info",
        }

    _space, headers, params = await _seed(env(0))
    log = tmp_path / "serve.log"
    proc, port = start_engram([sys.executable, "-m", "engram", "serve"], env, log)
    try:
        url = f"http://127.0.0.1:{port}/xrpc/garden.engram.searchMemories"
        async with aiohttp.ClientSession() as session:
            for _ in range(2):  # the second answer comes from the warm index on a kept-alive connection
                async with session.get(url, params=params, headers=headers) as r:
                    body = await r.json()
                assert r.status == 200, body
                assert body["memories"][0]["text"] == TEXTS[2]
                assert len(body["memories"]) == 2
            async with session.get(url, params=params) as r:  # unsigned: the error shape is unchanged
                assert r.status == 401
                assert (await r.json())["error"] == "AuthRequired"
    finally:
        stop(proc)
    assert proc.returncode == 0  # SIGTERM: a graceful shutdown through the loop's signal handler
    assert _ready_line(log.read_text())["event_loop"] == event_loop
    if platform.system() == "Linux" and platform.libc_ver()[0] == "glibc":
        # each process fixed glibc's malloc thresholds first (engram/serving/malloc_thresholds.py): the one
        # server, or the parent and each of its children
        fixed = [line for line in log.read_text().splitlines() if "malloc mmap/trim thresholds fixed" in line]
        assert len(fixed) == (1 if processes == 1 else 1 + processes), log.read_text()
