"""The PostgreSQL store backend, selected by ENGRAM_DATABASE_URL (docs/scale-out.md#the-store-on-postgresql).

`PostgresStore` has the `Store` API (write/read, commit hooks, direct readers, close) over a psycopg 3
connection pool; the repositories in engram/store run unchanged on `PgConnection`, which translates their
placeholders and carries the dialect they ask for the few fragments that differ.
"""
