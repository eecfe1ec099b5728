"""ENGRAM_DATABASE_URL picks the store backend (docs/scale-out.md#the-store-on-postgresql)."""

import pytest

from engram.config import ConfigError, read_env


@pytest.fixture
def backend() -> str:
    return "none"  # configuration only: no store is opened


def test_unset_or_empty_means_sqlite():
    assert read_env({}).database_url is None
    assert read_env({"ENGRAM_DATABASE_URL": " "}).database_url is None


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://engram@db.internal:5432/engram",
        "postgres://u:p@127.0.0.1/e",
        "postgresql:///e?host=/run/pg",
    ],
)
def test_postgres_urls_are_accepted(url):
    assert read_env({"ENGRAM_DATABASE_URL": url}).database_url == url


@pytest.mark.parametrize(
    "url", ["mysql://u:secret@h/db", "sqlite:///x.db", "postgresql:///nohost", "db.internal"]
)
def test_other_urls_are_refused_without_echoing_them(url):
    with pytest.raises(ConfigError, match="ENGRAM_DATABASE_URL must be a postgresql://") as raised:
        read_env({"ENGRAM_DATABASE_URL": url})
    assert "secret" not in str(raised.value)  # a password in the URL never reaches logs
