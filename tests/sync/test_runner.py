"""The per-space runner: one pass at a time, and requests during a pass fold into one follow-up."""

from __future__ import annotations

import asyncio

from support.sync import until

from engram.sync.runner import SpaceRunner


async def test_requests_during_a_pass_become_one_follow_up_pass():
    release = asyncio.Event()
    seen: list[tuple[bool, dict]] = []

    async def run_pass(full, repos):
        seen.append((full, dict(repos)))
        await release.wait()
        return False

    runner = SpaceRunner("at://did:plc:a/space/garden.engram.space/x", run_pass)
    runner.request(repos={"did:plc:alice": "3k2"})
    await until(lambda: len(seen) == 1, "first pass started")
    for i in range(50):  # a burst while the first pass runs
        runner.request(repos={f"did:plc:m{i % 3}": f"3k{i:03d}"})
    runner.request(full=True)
    release.set()
    await until(lambda: not runner.busy, "runner idle")
    assert len(seen) == 2  # one follow-up, however many requests arrived
    assert seen[1] == (True, {"did:plc:m0": "3k048", "did:plc:m1": "3k049", "did:plc:m2": "3k047"})
    assert runner.owed_since is None


async def test_a_failing_pass_does_not_stop_the_runner():
    calls = 0

    async def run_pass(full, repos):
        nonlocal calls
        calls += 1
        if calls == 1:
            raise RuntimeError("boom")
        return False

    runner = SpaceRunner("at://did:plc:a/space/garden.engram.space/x", run_pass)
    runner.request(full=True)
    await until(lambda: not runner.busy, "first pass done")
    runner.request(full=True)
    await until(lambda: calls == 2 and not runner.busy, "second pass done")


async def test_a_config_change_asks_for_one_more_full_pass():
    seen = []

    async def run_pass(full, repos):
        seen.append(full)
        return len(seen) == 1  # the first pass saw a config change

    runner = SpaceRunner("at://did:plc:a/space/garden.engram.space/x", run_pass)
    runner.request(repos={"did:plc:authority": None})
    await until(lambda: not runner.busy and len(seen) == 2, "follow-up full pass")
    assert seen == [False, True]
