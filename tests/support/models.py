"""Model specs the tests' stores are configured with."""

from engram.store import ModelSpec

SERVICE_MODEL = ModelSpec("test-model", "sha256:test", 16)  # tests/service/conftest.py

STORE_MODEL = ModelSpec("all-MiniLM-L6-v2", "sha256:abc", 8)  # tests/store/conftest.py
