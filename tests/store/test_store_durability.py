"""No acknowledged write is lost when the process is killed with SIGKILL mid-stream (the durability
contract in README.md). On PostgreSQL the server then crashes too (immediate stop, crash recovery on
restart), so "acknowledged" must mean "in the server's flushed WAL", not only "sent"."""

import asyncio
import os
import signal
import sys
from pathlib import Path

from engram.store.backends import open_store
from engram.store.memory_reads import space_status
from engram.store.tid import is_valid_tid

SPACE = "at://did:plc:authority1/space/garden.engram.space/durable"
WRITER = Path(__file__).resolve().parents[1] / "support" / "durability_writer.py"
REPO = Path(__file__).parents[2]
REPO_ON_PATH = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))


async def test_acknowledged_writes_survive_sigkill(tmp_path, backend, request):
    target = request.getfixturevalue("pg_database_url") if backend == "postgres" else str(tmp_path)
    with (tmp_path / "writer.err").open("wb") as stderr:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            str(WRITER),
            target,
            SPACE,
            stdout=asyncio.subprocess.PIPE,
            stderr=stderr,
            cwd=REPO,
            env={**os.environ, "PYTHONPATH": REPO_ON_PATH},  # import this checkout, installed or not
        )
    acknowledged, killed = [], False
    try:
        assert (await asyncio.wait_for(process.stdout.readline(), 20)).strip() == b"ready"
        while len(acknowledged) < 300:
            line = await asyncio.wait_for(process.stdout.readline(), 10)
            assert line, "writer exited early"
            acknowledged.append(line.decode().strip())
        process.send_signal(signal.SIGKILL)  # mid-stream: the next write is in flight
        killed = True
        rest = await asyncio.wait_for(process.stdout.read(), 10)
        acknowledged += rest.decode().split()  # lines printed before the kill landed were acknowledged too
    finally:
        # Signal at most once: a second kill() would poll() and reap the zombie behind asyncio's child
        # watcher, which then reports returncode 255 instead of -SIGKILL.
        if not killed and process.returncode is None:
            process.kill()
        await process.wait()
    assert process.returncode == -signal.SIGKILL, (tmp_path / "writer.err").read_text()
    assert all(is_valid_tid(rkey) for rkey in acknowledged)

    if backend == "postgres":
        request.getfixturevalue("postgres_server").crash_and_restart()
    store = await open_store(tmp_path, target if backend == "postgres" else None)
    try:

        def rkeys(conn):
            return {row[0] for row in conn.execute("SELECT rkey FROM memories")}

        present = await store.read(rkeys)
        status = await store.read(space_status, SPACE)
    finally:
        await store.close()
    missing = set(acknowledged) - present
    assert not missing, f"{len(missing)} acknowledged writes lost"
    assert status.memories == len(present) >= len(acknowledged)
