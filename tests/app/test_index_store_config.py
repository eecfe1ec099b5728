"""ENGRAM_INDEX_STORE / ENGRAM_S3_ENDPOINT_URL: accepted forms, and a clear ConfigError for anything else."""

import pytest

from engram.config import ConfigError, read_env


@pytest.mark.parametrize("url", ["file:///srv/engram/snapshots", "s3://bucket", "s3://bucket/engram/indexes"])
def test_snapshot_store_urls_accepted(url):
    assert read_env({"ENGRAM_INDEX_STORE": url}).index_store == url


@pytest.mark.parametrize(
    "url",
    ["file://relative/dir", "file:///", "/srv/snapshots", "gs://bucket/x", "s3:///no-bucket", "s3://b/x?y=1"],
)
def test_other_snapshot_store_urls_are_refused_by_name(url):
    with pytest.raises(ConfigError, match="ENGRAM_INDEX_STORE"):
        read_env({"ENGRAM_INDEX_STORE": url})


def test_unset_means_no_snapshot_store():
    settings = read_env({})
    assert settings.index_store is None and settings.s3_endpoint_url is None


def test_s3_endpoint_must_be_an_http_url():
    assert read_env({"ENGRAM_S3_ENDPOINT_URL": "http://minio:9000/"}).s3_endpoint_url == "http://minio:9000"
    with pytest.raises(ConfigError, match="ENGRAM_S3_ENDPOINT_URL"):
        read_env({"ENGRAM_S3_ENDPOINT_URL": "minio:9000"})
