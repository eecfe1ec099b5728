"""Which space a Memory Bank search is for, found before the request is authenticated, so a cluster node
can send it to the space's holder (docs/scale-out.md#forwarding).

A Memory Bank request names no space: its bearer credential does. Every search it makes runs on the
primary space of an engram API key, whether the bearer is the key itself or an OAuth access token issued
for it. The lookup here is only a routing hint, one point read: the node that serves the request
authenticates it again in full (revocation, expiry, scopes), and a credential that resolves to nothing is
served where it arrived, so the usual 401 answers it.
"""

from __future__ import annotations

import sqlite3

from engram.oauth.server import ACCESS_PREFIX
from engram.oauth.store import get_token
from engram.store.apikeys import TOKEN_PREFIX, get_api_key, lookup_api_key

# The Memory Bank paths that search an index (upserts and deletes are writes: any node commits them).
SEARCH_PATHS = frozenset({"/memorybank/query", "/memorybank/query-action"})


def bearer_space(conn: sqlite3.Connection, token: str) -> str | None:
    """The primary space of the API key behind `token` (an API key or an OAuth access token)."""
    if token.startswith(TOKEN_PREFIX):
        key = lookup_api_key(conn, token)
    elif token.startswith(ACCESS_PREFIX):
        row = get_token(conn, token, "access")
        key = get_api_key(conn, row.key_id) if row is not None else None
    else:
        return None
    return key.space_uri if key is not None else None
