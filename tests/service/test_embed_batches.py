"""Document embeds queued together share one worker call (engram/service/embed_batches.py,
docs/internals.md#embedding-batches): each caller gets exactly its own rows, and a failing text fails only
its own caller. The worker is held busy by a gate, so the batching does not depend on timing."""

from __future__ import annotations

import asyncio
import threading

import numpy as np
import pytest

from engram.embed.hashing import HashingEmbedder
from engram.service.embed_batches import MAX_TEXTS, embed_batched
from engram.workers import WorkerPool


class CountingEmbedder:
    """The hashing embedder, recording each call's texts; a text "bad" makes a call fail."""

    def __init__(self):
        self.inner = HashingEmbedder()
        self.dims = self.inner.dims
        self.calls: list[list[str]] = []

    def embed(self, texts, kind):
        assert kind == "document"
        self.calls.append(list(texts))
        if "bad" in texts:
            raise ValueError("cannot embed 'bad'")
        return self.inner.embed(texts, kind)


@pytest.fixture
async def busy_pool():
    """A one-worker pool and a gate: the worker is held until the test opens it."""
    pool = WorkerPool(1, "test-embed")
    gate, started = threading.Event(), threading.Event()

    def hold():
        started.set()
        assert gate.wait(60)

    holding = asyncio.wrap_future(pool.start(hold))
    while not started.is_set():
        await asyncio.sleep(0.01)
    yield pool, gate
    gate.set()
    await holding
    pool.close()


async def test_embeds_queued_while_the_worker_is_busy_share_one_call(busy_pool):
    pool, gate = busy_pool
    embedder = CountingEmbedder()
    groups = [["one"], ["two", "three"], ["four"]]
    waiting = [asyncio.ensure_future(embed_batched(pool, embedder, texts)) for texts in groups]
    await asyncio.sleep(0)  # every caller has joined
    gate.set()
    results = await asyncio.gather(*waiting)
    assert embedder.calls == [["one", "two", "three", "four"]]
    for texts, rows in zip(groups, results, strict=True):
        assert np.array_equal(rows, embedder.inner.embed(texts, "document"))


async def test_a_failing_text_fails_only_its_own_caller(busy_pool):
    pool, gate = busy_pool
    embedder = CountingEmbedder()
    good = asyncio.ensure_future(embed_batched(pool, embedder, ["fine"]))
    bad = asyncio.ensure_future(embed_batched(pool, embedder, ["bad"]))
    also_good = asyncio.ensure_future(embed_batched(pool, embedder, ["also fine"]))
    await asyncio.sleep(0)
    gate.set()
    assert np.array_equal(await good, embedder.inner.embed(["fine"], "document"))
    assert np.array_equal(await also_good, embedder.inner.embed(["also fine"], "document"))
    with pytest.raises(ValueError, match="cannot embed"):
        await bad
    # the batch failed, then each member ran alone
    assert embedder.calls == [["fine", "bad", "also fine"], ["fine"], ["bad"], ["also fine"]]


async def test_a_full_batch_starts_the_next_one(busy_pool):
    pool, gate = busy_pool
    embedder = CountingEmbedder()
    first = [f"a{i}" for i in range(MAX_TEXTS - 1)]
    waiting = [
        asyncio.ensure_future(embed_batched(pool, embedder, first)),
        asyncio.ensure_future(
            embed_batched(pool, embedder, ["b1", "b2"])
        ),  # does not fit: a batch of its own
        asyncio.ensure_future(embed_batched(pool, embedder, ["c"])),  # joins the newest open batch
    ]
    await asyncio.sleep(0)
    gate.set()
    results = await asyncio.gather(*waiting)
    assert embedder.calls == [first, ["b1", "b2", "c"]]
    assert [len(r) for r in results] == [MAX_TEXTS - 1, 2, 1]


async def test_a_lone_embed_runs_alone_and_a_later_one_starts_a_new_batch():
    pool = WorkerPool(1, "test-embed")
    try:
        embedder = CountingEmbedder()
        assert np.array_equal(
            await embed_batched(pool, embedder, ["x"]), embedder.inner.embed(["x"], "document")
        )
        await embed_batched(pool, embedder, ["y"])
        assert embedder.calls == [["x"], ["y"]]
    finally:
        pool.close()
