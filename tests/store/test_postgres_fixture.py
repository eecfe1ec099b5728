"""The real-PostgreSQL fixture itself: a server on loopback, a clean database per test."""

from urllib.parse import urlsplit

import psycopg


def test_each_test_gets_an_empty_database_of_its_own(pg_empty_database_url, postgres_dsn):
    pg_database_url = pg_empty_database_url
    with psycopg.connect(pg_database_url, autocommit=True) as conn:
        tables = conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").fetchone()[0]
        assert tables == 0
        conn.execute("CREATE TABLE marker (x int)")
    with psycopg.connect(postgres_dsn, autocommit=True) as admin:
        assert admin.info.host == "127.0.0.1"  # the server listens on loopback TCP too
        names = {row[0] for row in admin.execute("SELECT datname FROM pg_database")}
    assert urlsplit(pg_database_url).path.lstrip("/") in names


def test_commits_are_durable_by_default(pg_database_url):
    with psycopg.connect(pg_database_url) as conn:
        assert conn.execute("SHOW fsync").fetchone()[0] == "on"
        assert conn.execute("SHOW synchronous_commit").fetchone()[0] == "on"


def test_the_migrated_database_is_emptied_between_tests(pg_database_url):
    """Run twice (both orders): each run sees no rows and restarted ids, whatever the other left."""
    with psycopg.connect(pg_database_url, autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM spaces").fetchone()[0] == 0
        new_id = conn.execute(
            "INSERT INTO spaces (uri, authority, skey, kind, created_at)"
            " VALUES ('at://did:plc:a/space/garden.engram.space/x', 'did:plc:a', 'x', 'hosted', 'now') RETURNING id"
        ).fetchone()[0]
        assert new_id == 1


test_the_migrated_database_is_emptied_between_tests_again = (
    test_the_migrated_database_is_emptied_between_tests
)
