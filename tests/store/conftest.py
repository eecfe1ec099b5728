"""Fixtures for the store tests: a real SQLite store in tmp_path, and a configured hosted space."""

import numpy as np
import pytest

from engram.store import Embedding, ModelSpec, Store, database_path
from engram.store.spaces import create_space, set_config

SPACE = "at://did:plc:authority1/space/garden.engram.space/main"
MODEL = ModelSpec("all-MiniLM-L6-v2", "sha256:abc", 8)


@pytest.fixture
def model() -> ModelSpec:
    return MODEL


@pytest.fixture
def make_embedding():
    def make(seed: int, spec: ModelSpec = MODEL) -> Embedding:
        vector = np.random.default_rng(seed).standard_normal(spec.dims).astype(np.float32)
        return Embedding(spec.model, spec.digest, spec.dims, vector)

    return make


@pytest.fixture
async def store(tmp_path):
    opened = await Store.open(database_path(tmp_path))
    yield opened
    await opened.close()


@pytest.fixture
async def space(store):
    """A hosted space configured with MODEL; returns its URI."""
    await store.write(create_space, SPACE, "hosted")
    await store.write(set_config, SPACE, MODEL)
    return SPACE
