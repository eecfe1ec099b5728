"""A small XRPC client over aiohttp for the CLI's remote commands (`engram search`, `engram admin`).

A server's error answer becomes a `RemoteError` carrying the lexicon's error name, so the CLI prints it as
`engram: <Error>: <message>` exactly like a local service error."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import aiohttp
import orjson

from ..xrpc.errors import XrpcError
from .errors import CliError

TIMEOUT = aiohttp.ClientTimeout(total=120, connect=10)
Params = Mapping[str, str | int | Sequence[str] | None]


class RemoteError(XrpcError):
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
    def __init__(self, base_url: str, session: aiohttp.ClientSession):
        self.base_url = base_url.rstrip("/")
        self.session = session

    def url(self, nsid: str) -> str:
        return f"{self.base_url}/xrpc/{nsid}"

    async def call(
        self, method: str, url: Any, *, headers: Mapping[str, str] | None = None, body: bytes | None = None
    ) -> Any:
        """One request; JSON answers are decoded, other 2xx answers returned as bytes."""
        try:
            async with self.session.request(method, url, headers=headers, data=body, timeout=TIMEOUT) as r:
                raw = await r.read()
                content_type = r.content_type
                status = r.status
        except aiohttp.ClientConnectorError as exc:
            raise CliError(
                f"cannot reach {self.base_url} ({exc.os_error.strerror or exc}); "
                "is `engram serve` running there? (see --url)"
            ) from None
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise CliError(f"request to {self.base_url} failed: {exc or type(exc).__name__}") from None
        if status >= 400:
            raise _remote_error(status, raw)
        if content_type == "application/json":
            return orjson.loads(raw) if raw else None
        return raw


def _remote_error(status: int, raw: bytes) -> RemoteError:
    try:
        body = orjson.loads(raw)
        return RemoteError(status, str(body["error"]), str(body.get("message", "")))
    except (orjson.JSONDecodeError, KeyError, TypeError):
        text = raw[:200].decode("utf-8", "replace").strip()
        return RemoteError(status, f"HTTP{status}", text or "the server gave no error body")
