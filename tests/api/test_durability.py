"""kill -9 in the middle of a bulk write: every write acknowledged before the kill is searchable after."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
from support.api import MODEL, Reader, settings_with, vector_params

from engram.app import create_app
from engram.app_keys import context_key
from engram.auth.crypto_keys import PrivateKey

WRITER = textwrap.dedent(
    """
    import asyncio, sys
    from pathlib import Path
    import numpy as np
    from engram.config import Settings
    from engram.lifecycle import open_context
    from engram.store import Embedding, MemoryWrite, ModelSpec

    MODEL = ModelSpec("test-model", "sha256:test", 16)

    def vector(i):
        v = np.random.default_rng(i).standard_normal(16).astype(np.float32)
        return (v / np.linalg.norm(v)).astype(np.float16)

    async def main():
        settings = Settings(data_dir=Path(sys.argv[1]), embedder="none", service_did="did:web:engram.test")
        async with open_context(settings, embedder=False) as ctx:
            space = await ctx.services.spaces.create_hosted("durable", model=MODEL)
            i = 0
            while True:
                batch = [MemoryWrite(author="did:web:engram.test", text=f"memory {i + j}",
                                     embedding=Embedding(MODEL.model, MODEL.digest, 16, vector(i + j)))
                         for j in range(5)]
                records = await ctx.services.memories.write(space.uri, batch)
                for j, record in enumerate(records):   # acknowledged: committed before write() returned
                    print(i + j, record.uri, flush=True)
                i += 5

    asyncio.run(main())
    """
)


def vector(i: int) -> np.ndarray:
    v = np.random.default_rng(i).standard_normal(16).astype(np.float32)
    return (v / np.linalg.norm(v)).astype(np.float16).astype(np.float32)


async def test_acknowledged_writes_survive_kill_9(aiohttp_client, settings):
    settings.data_dir.mkdir(parents=True)
    acknowledged: dict[int, str] = {}
    with subprocess.Popen(  # noqa: ASYNC220 - the child must be a separate process to kill -9 it
        [sys.executable, "-c", WRITER, str(settings.data_dir)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:
        deadline = time.monotonic() + 60
        try:
            while len(acknowledged) < 200 and time.monotonic() < deadline:
                line = proc.stdout.readline()
                if not line:
                    break
                number, uri = line.split()
                acknowledged[int(number)] = uri
        finally:
            os.kill(proc.pid, signal.SIGKILL)  # mid-stream: the writer is in the middle of its next batch
            _, errors = proc.communicate()
    assert len(acknowledged) >= 200, errors

    client = await aiohttp_client(await create_app(settings_with(settings, search_rate=0)))
    ctx = client.app[context_key]
    space = ctx.services.spaces.resolve_uri("durable")
    reader = Reader(client, ctx, space, PrivateKey.generate("ES256"))
    for number, uri in acknowledged.items():
        body = await (await reader.search(**vector_params(vector(number), MODEL), limit="1")).json()
        assert body["memories"][0]["uri"] == uri, number
