import pytest

from engram.workers import WorkerPool


@pytest.fixture
def pool():
    workers = WorkerPool(2, name="test-search")
    yield workers
    workers.close()
