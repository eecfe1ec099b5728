"""JSON log lines on stderr, and an access log that never records query text or vectors."""

from __future__ import annotations

import functools
import logging
import sys
import time
from urllib.parse import parse_qsl, unquote_plus, urlencode

import orjson
from aiohttp.abc import AbstractAccessLogger
from aiohttp.web import BaseRequest, StreamResponse

# Query parameters whose values are the caller's private data: never written to any log.
REDACTED_PARAMS = frozenset({"q", "vector", "token"})  # token: console sign-in links


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "ts": round(record.created, 3),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        extra = getattr(record, "fields", None)
        if isinstance(extra, dict):
            entry.update(extra)
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return orjson.dumps(entry, default=str).decode()


def configure_logging(level: str) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())


def redact_query(query_string: str) -> str:
    # Parsing and re-encoding a query costs ~20 µs a request (urllib is pure Python), most of the access
    # log's cost. With the redacted values dropped first (keys decoded as parse_qsl decodes them, so
    # `vect%6Fr=` still counts) what is left repeats from request to request (the space, model, limit), so
    # its rendering is cached (docs/benchmarks.md#throughput).
    return _render_redacted("&".join(_without_redacted_value(piece) for piece in query_string.split("&")))


@functools.lru_cache(maxsize=256)  # keys are bounded by the request-line limit: a few MiB at worst
def _render_redacted(query_string: str) -> str:
    pairs = parse_qsl(query_string, keep_blank_values=True)
    return urlencode([(k, "[redacted]" if k in REDACTED_PARAMS else v) for k, v in pairs])


def _without_redacted_value(piece: str) -> str:
    key, sep, _value = piece.partition("=")
    return key + sep if sep and unquote_plus(key) in REDACTED_PARAMS else piece


class AccessLogger(AbstractAccessLogger):
    def log(self, request: BaseRequest, response: StreamResponse, elapsed: float) -> None:
        query = redact_query(request.query_string) if request.query_string else ""
        self.logger.info(
            "request",
            extra={
                "fields": {
                    "method": request.method,
                    "path": request.path,
                    "query": query,
                    "status": response.status,
                    "ms": round(elapsed * 1000, 2),
                    "remote": request.remote,
                    "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                }
            },
        )

    @property
    def enabled(self) -> bool:
        return self.logger.isEnabledFor(logging.INFO)
