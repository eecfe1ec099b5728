"""Snapshot stores for tests: a file:// directory, or a real S3 API from moto's server on 127.0.0.1.

moto in server mode is a real HTTP server speaking the S3 protocol (signatures, ranged GETs, 404s), so the
s3:// backend is exercised over the network exactly as against AWS, only on loopback. One server per test
session; each test gets a bucket of its own. Fake credentials are set in the environment, where obstore
reads them, so nothing can reach a real account. obstore connects from Rust, past the Python socket fence
of tests/conftest.py: every endpoint made here is 127.0.0.1 by construction.
"""

from __future__ import annotations

import socket
import uuid
from collections.abc import Iterator

import pytest

FAKE_AWS = {
    "AWS_ACCESS_KEY_ID": "engram-test",
    "AWS_SECRET_ACCESS_KEY": "engram-test-secret",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_REGION": "us-east-1",
}


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released): connections to it are refused."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def fake_aws_env(monkeypatch) -> None:
    for name in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    for name, value in FAKE_AWS.items():
        monkeypatch.setenv(name, value)


@pytest.fixture(scope="session")
def moto_endpoint() -> Iterator[str]:
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


def new_bucket(endpoint: str) -> str:
    import boto3  # moto's own dependency; only to create the bucket (obstore does not manage buckets)

    name = f"snapshots-{uuid.uuid4().hex[:12]}"
    client = boto3.client(
        "s3",
        endpoint_url=endpoint,
        region_name=FAKE_AWS["AWS_DEFAULT_REGION"],
        aws_access_key_id=FAKE_AWS["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=FAKE_AWS["AWS_SECRET_ACCESS_KEY"],
    )
    client.create_bucket(Bucket=name)
    return name


@pytest.fixture(params=["file", "s3"])
def snapshot_store_url(request, tmp_path, monkeypatch) -> tuple[str, str | None]:
    """(ENGRAM_INDEX_STORE, ENGRAM_S3_ENDPOINT_URL) of an empty snapshot store, once per backend."""
    if request.param == "file":
        return (tmp_path / "snapshot-store").as_uri(), None
    fake_aws_env(monkeypatch)
    endpoint = request.getfixturevalue("moto_endpoint")
    return f"s3://{new_bucket(endpoint)}/engram/indexes", endpoint
