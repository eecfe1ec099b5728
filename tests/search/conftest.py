import pytest
from support.fakes.object_store import moto_endpoint, snapshot_store_url  # noqa: F401 - fixtures (test_snapshots.py)

from engram.search.manager import IndexManager
from engram.workers import WorkerPool


@pytest.fixture
def pool():
    workers = WorkerPool(2, name="test-search")
    yield workers
    workers.close()


@pytest.fixture(autouse=True)
def patient_index_loads(monkeypatch):
    """IndexManager's default load wait (0.5 s) is a production latency choice; a test that builds an index
    on a busy CI machine can need longer, and would then get IndexLoading for the machine's load. Tests of
    that path pass load_wait_s themselves; every other manager waits for its load."""
    monkeypatch.setitem(IndexManager.__init__.__kwdefaults__, "load_wait_s", 600.0)
