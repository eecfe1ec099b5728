"""Rewrite the repositories' SQLite-flavoured SQL for psycopg: the one hand-written translator, kept tiny.

The repositories' SQL is written to the subset both databases accept (docs/scale-out.md). What remains is
lexical and handled here, once per distinct statement (cached):
- `?` placeholders become psycopg's `%s`, numbered `?N` become `%(pN)s` (the parameters then go as a
  dict); a literal `%` is doubled so psycopg does not read it as a placeholder;
- `INDEXED BY <index>` (a SQLite planner pin) is dropped: PostgreSQL has no hints and plans those range
  scans by itself.
Text inside single-quoted literals, double-quoted identifiers and `--` comments is copied unchanged
(apart from `%` doubling, which psycopg needs everywhere). Hand-written because no maintained library
converts qmark to pyformat placeholders; sqlglot could, but as a full SQL transpiler it is a large
dependency for three token rules.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from typing import Any

_TOKENS = re.compile(
    r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|--[^\n]*|\?(\d*)|%|\bINDEXED\s+BY\s+\w+\s*", re.IGNORECASE
)


@functools.lru_cache(maxsize=1024)
def translate(sql: str) -> tuple[str, bool]:
    """(psycopg SQL, whether it uses numbered parameters)."""
    numbered = False

    def replace(match: re.Match[str]) -> str:
        nonlocal numbered
        token = match.group(0)
        if token == "%":
            return "%%"
        if token.startswith("?"):
            if match.group(1):
                numbered = True
                return f"%(p{int(match.group(1))})s"
            return "%s"
        if token[0] in "'\"-":
            return token.replace("%", "%%")
        return ""  # INDEXED BY <name>

    return _TOKENS.sub(replace, sql), numbered


def adapt_params(params: Sequence[Any] | Mapping[str, Any], numbered: bool) -> Sequence[Any] | dict[str, Any]:
    """Booleans go in as 0/1, as SQLite stores them (the schema's flag columns are integers)."""
    values = [int(v) if type(v) is bool else v for v in params]
    if numbered:
        return {f"p{i}": v for i, v in enumerate(values, start=1)}
    return values
