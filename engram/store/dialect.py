"""The few SQL fragments that differ between SQLite and PostgreSQL, so each repository exists once.

Repositories write portable SQL (`?` placeholders, `ON CONFLICT ... DO NOTHING/UPDATE`, `RETURNING`,
`IS DISTINCT FROM`) and ask `dialect_of(conn)` only for what has no common spelling: reading a field of a
JSON text column, "is in this list" with the list as one parameter, and byte lengths. The PostgreSQL
connection adapter (engram/store/postgres/connection.py) carries its dialect; a plain sqlite3 connection
has none and gets SQLITE (docs/scale-out.md#the-store-on-postgresql).
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any

import orjson


class SqliteDialect:
    name = "sqlite"

    def json_value(self, column: str, field: str) -> str:
        """The field's JSON value, comparable and sortable as its own type (numbers sort as numbers)."""
        return f"json_extract({column}, '$.{field}')"

    def json_text(self, column: str, field: str) -> str:
        """The field as text when it is a string (what `= ?` with a str parameter compares against)."""
        return f"json_extract({column}, '$.{field}')"

    def json_is_string(self, column: str, field: str) -> str:
        return f"json_type({column}, '$.{field}') = 'text'"

    def json_equals(self, column: str, field: str, value: Any) -> tuple[str, Any]:
        """A condition "field == value" for a str/int/float/bool value, and its one parameter."""
        return f"json_extract({column}, '$.{field}') = ?", value

    def in_list(self, values: Sequence[Any]) -> tuple[str, Any]:
        """`IN (...)` with the whole list as ONE parameter (no statement per list length)."""
        return "IN (SELECT value FROM json_each(?))", orjson.dumps(list(values)).decode()

    def id_table(self, row_ids: Sequence[int], alias: str) -> tuple[str, Any]:
        """A table `alias(value)` of integer ids, usable as the outer side of a join."""
        return f"json_each(?) AS {alias}", orjson.dumps([int(r) for r in row_ids]).decode()

    def contains(self, haystack: str) -> str:
        """`haystack` contains the parameter as a substring (case-sensitive)."""
        return f"instr({haystack}, ?) > 0"

    def byte_length(self, expression: str) -> str:
        return f"length(CAST({expression} AS BLOB))"


class PostgresDialect:
    name = "postgresql"

    # attrs columns hold the JSON text exactly as written (the same bytes on both backends); they are read
    # as jsonb at query time, and the expression indexes in postgres/migrations index the same expressions.
    def json_value(self, column: str, field: str) -> str:
        return f"(({column})::jsonb -> '{field}')"

    def json_text(self, column: str, field: str) -> str:
        return f"(({column})::jsonb ->> '{field}')"

    def json_is_string(self, column: str, field: str) -> str:
        return f"jsonb_typeof(({column})::jsonb -> '{field}') = 'string'"

    def json_equals(self, column: str, field: str, value: Any) -> tuple[str, Any]:
        return f"(({column})::jsonb -> '{field}') = CAST(? AS jsonb)", orjson.dumps(value).decode()

    def in_list(self, values: Sequence[Any]) -> tuple[str, Any]:
        return "= ANY(?)", list(values)

    def id_table(self, row_ids: Sequence[int], alias: str) -> tuple[str, Any]:
        return f"unnest(CAST(? AS bigint[])) AS {alias}(value)", [int(r) for r in row_ids]

    def contains(self, haystack: str) -> str:
        return f"strpos({haystack}, ?) > 0"

    def byte_length(self, expression: str) -> str:
        return f"octet_length({expression})"


SQLITE = SqliteDialect()
POSTGRES = PostgresDialect()


def dialect_of(conn: Any) -> SqliteDialect | PostgresDialect:
    """The dialect of a repository's connection: the adapter's own, else SQLite (a sqlite3.Connection)."""
    return getattr(conn, "dialect", SQLITE)


def pipelined(conn: Any) -> contextlib.AbstractContextManager[Any]:
    """Statements inside are sent without waiting for each one's answer where the backend allows it
    (psycopg's pipeline mode on PostgreSQL): only fetching a result waits, for everything sent before it.
    SQLite runs in-process, so there is nothing to save. An error inside still fails the whole write."""
    pipeline = getattr(conn, "pipeline", None)
    return pipeline() if pipeline is not None else contextlib.nullcontext()
