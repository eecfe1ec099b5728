"""Fixtures for the store tests: a real store on each backend (SQLite in tmp_path, PostgreSQL in a fresh
database of the session's server), and a configured hosted space.

Every test that takes `store` runs once per backend; a module about one backend's own machinery overrides
`backend` with a plain fixture returning that backend's name."""

import numpy as np
import pytest
from support.models import STORE_MODEL

from engram.store import Embedding, ModelSpec, Store, database_path
from engram.store.spaces import create_space, set_config

SPACE = "at://did:plc:authority1/space/garden.engram.space/main"
MODEL = STORE_MODEL


@pytest.fixture
def model() -> ModelSpec:
    return MODEL


@pytest.fixture
def make_embedding():
    def make(seed: int, spec: ModelSpec = MODEL) -> Embedding:
        vector = np.random.default_rng(seed).standard_normal(spec.dims).astype(np.float32)
        return Embedding(spec.model, spec.digest, spec.dims, vector)

    return make


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request) -> str:
    return request.param


@pytest.fixture
async def store(backend, tmp_path, request):
    if backend == "postgres":
        from engram.store.postgres.store import PostgresStore

        opened = await PostgresStore.open(request.getfixturevalue("pg_database_url"))
    else:
        opened = await Store.open(database_path(tmp_path))
    yield opened
    await opened.close()


@pytest.fixture
async def space(store):
    """A hosted space configured with MODEL; returns its URI."""
    await store.write(create_space, SPACE, "hosted")
    await store.write(set_config, SPACE, MODEL)
    return SPACE
