"""JSON log lines on stderr, and an access log that never records query text or vectors."""

from __future__ import annotations

import logging
import sys
import time
from urllib.parse import parse_qsl, urlencode

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
    pairs = parse_qsl(query_string, keep_blank_values=True)
    return urlencode([(k, "[redacted]" if k in REDACTED_PARAMS else v) for k, v in pairs])


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
