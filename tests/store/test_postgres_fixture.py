"""The real-PostgreSQL fixture itself: a server on loopback, a clean database per test."""

import psycopg


def test_each_test_gets_an_empty_database_of_its_own(pg_database_url, postgres_dsn):
    with psycopg.connect(pg_database_url, autocommit=True) as conn:
        tables = conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").fetchone()[0]
        assert tables == 0
        conn.execute("CREATE TABLE marker (x int)")
        host, port = conn.info.host, conn.info.port
    assert host == "127.0.0.1" and port > 0
    with psycopg.connect(postgres_dsn, autocommit=True) as admin:
        names = {row[0] for row in admin.execute("SELECT datname FROM pg_database")}
    assert pg_database_url.rsplit("/", 1)[1] in names


def test_commits_are_durable_by_default(pg_database_url):
    with psycopg.connect(pg_database_url) as conn:
        assert conn.execute("SHOW fsync").fetchone()[0] == "on"
        assert conn.execute("SHOW synchronous_commit").fetchone()[0] == "on"
