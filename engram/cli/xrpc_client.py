"""A small XRPC client over aiohttp for the CLI's remote commands (`engram search`, `engram admin`).

A server's error answer becomes a `RemoteError` carrying the lexicon's error name, so the CLI prints it as
`engram: <Error>: <message>` exactly like a local service error."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import orjson

from ..errors import EngramError
from .errors import CliError

TIMEOUT = aiohttp.ClientTimeout(total=120, connect=10)
# A space still loading (503 IndexLoading), a busy embedder (503) or a rate limit (429) says "retry shortly":
# queries (GET, so safe to repeat) are retried after the server's Retry-After, within this budget.
RETRY_STATUSES = frozenset({429, 503})
RETRY_BUDGET_S = 20.0
MAX_RETRY_WAIT_S = 5.0
Params = Mapping[str, str | int | Sequence[str] | None]


class RemoteError(EngramError):
    def __init__(self, status: int, error: str, message: str):
        super().__init__(message, error)
        self.status = status


def query_pairs(params: Params) -> list[tuple[str, str]]:
    """Query parameters as pairs; lists repeat their name (XRPC arrays), None is left out."""
    pairs: list[tuple[str, str]] = []
    for name, value in params.items():
        if value is None:
            continue
        values = value if isinstance(value, (list, tuple)) else [value]
        pairs.extend((name, str(v)) for v in values)
    return pairs


class XrpcClient:
    def __init__(self, base_url: str, session: aiohttp.ClientSession, *, flag: str = "--url"):
        """`flag`: the option that named `base_url`, for the messages."""
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise CliError(
                f"{flag} must be an http(s) URL such as http://127.0.0.1:8080, got {base_url!r}", 2
            )
        self.base_url = base_url.rstrip("/")
        self.session = session
        self.flag = flag

    def url(self, nsid: str) -> str:
        return f"{self.base_url}/xrpc/{nsid}"

    async def call(
        self, method: str, url: Any, *, headers: Mapping[str, str] | None = None, body: bytes | None = None
    ) -> Any:
        """One request (queries retried while the server says "retry shortly"); JSON answers are decoded,
        other 2xx answers returned as bytes."""
        waited = 0.0
        while True:
            status, content_type, raw, retry_after = await self._once(method, url, headers, body)
            if method == "GET" and status in RETRY_STATUSES and waited + retry_after <= RETRY_BUDGET_S:
                await asyncio.sleep(retry_after)
                waited += retry_after
                continue
            break
        if status >= 400:
            raise _remote_error(status, raw)
        if content_type == "application/json":
            return orjson.loads(raw) if raw else None
        return raw

    async def _once(
        self, method: str, url: Any, headers: Mapping[str, str] | None, body: bytes | None
    ) -> tuple[int, str, bytes, float]:
        try:
            async with self.session.request(method, url, headers=headers, data=body, timeout=TIMEOUT) as r:
                return r.status, r.content_type, await r.read(), _retry_after(r.headers.get("Retry-After"))
        except aiohttp.ClientConnectorError as exc:
            raise CliError(
                f"cannot reach {self.base_url} ({exc.os_error.strerror or exc}); "
                f"is `engram serve` running there? (see {self.flag})"
            ) from None
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise CliError(f"request to {self.base_url} failed: {exc or type(exc).__name__}") from None


def _retry_after(value: str | None) -> float:
    try:
        return min(max(float(value), 0.1), MAX_RETRY_WAIT_S) if value is not None else 1.0
    except ValueError:
        return 1.0


def _remote_error(status: int, raw: bytes) -> RemoteError:
    try:
        body = orjson.loads(raw)
        return RemoteError(status, str(body["error"]), str(body.get("message", "")))
    except (orjson.JSONDecodeError, KeyError, TypeError):
        text = raw[:200].decode("utf-8", "replace").strip()
        return RemoteError(status, f"HTTP{status}", text or "the server gave no error body")
