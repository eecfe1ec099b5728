"""JSON log lines on stderr, and an access log that never records query text or vectors."""

from __future__ import annotations

import contextlib
import functools
import logging
import sys
import threading
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


class BatchedStderrHandler(logging.StreamHandler):
    """JSON lines on stderr, written in batches: a warning or worse is flushed at once, info lines (the
    access log: one per request) at most `interval` seconds later by a flusher thread.

    Why: a flush per line is a write(2) on the event loop per request, and every system call there lets a
    worker thread take the GIL, so the loop then waits for it; at info level that cost a search ~55 µs of
    CPU (docs/benchmarks.md#throughput). The price: after a kill -9, up to `interval` seconds of info lines
    are lost; warnings and errors never wait. `flush_now` (and logging.shutdown at exit) writes the rest."""

    def __init__(self, interval: float = 0.05):
        # Our own block-buffered writer on fd 2: sys.stderr is line-buffered, i.e. flushes every line.
        stream = open(  # noqa: SIM115 - lives as long as the process, closed by logging.shutdown
            sys.stderr.fileno(),
            "w",
            buffering=1 << 16,
            encoding="utf-8",
            errors="backslashreplace",
            closefd=False,
        )
        super().__init__(stream)
        self.interval = interval
        self._dirty = threading.Event()
        threading.Thread(target=self._flush_later, name="engram-log-flush", daemon=True).start()

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.stream.write(self.format(record) + self.terminator)
        except RecursionError:
            raise
        except Exception:  # noqa: BLE001 - logging's own contract: report through handleError, go on
            self.handleError(record)
            return
        if record.levelno >= logging.WARNING:
            self.flush()
        elif not self._dirty.is_set():
            self._dirty.set()

    def _flush_later(self) -> None:
        while True:
            self._dirty.wait()
            time.sleep(self.interval)  # gather the lines of many requests into one write
            self._dirty.clear()  # before the flush: a line written during it sets it again
            self.flush()


def configure_logging(level: str, *, batched: bool = False) -> None:
    """JSON lines on stderr; `batched` (the server) writes info lines in batches (BatchedStderrHandler)."""
    handler: logging.Handler = logging.StreamHandler(sys.stderr)
    if batched:
        with contextlib.suppress(
            OSError, ValueError, AttributeError
        ):  # no usable fd 2 (sys.stderr None or detached)
            handler = BatchedStderrHandler()
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    # Nothing engram logs uses the caller's file and line, thread or process names: skip gathering them for
    # every record (the logging HOWTO's "Optimization" section names these switches).
    logging._srcfile = None
    logging.logThreads = False
    logging.logProcesses = False
    logging.logMultiprocessing = False


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
    return key + sep if sep and _is_redacted(key) else piece


@functools.lru_cache(maxsize=256)  # the few keys clients send; decoding one costs ~1 µs of pure Python
def _is_redacted(key: str) -> bool:
    return unquote_plus(key) in REDACTED_PARAMS


@functools.lru_cache(maxsize=2)
def _utc_second(second: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(second))


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
                    "at": _utc_second(int(time.time())),  # formatted once a second
                }
            },
        )

    @property
    def enabled(self) -> bool:
        return self.logger.isEnabledFor(logging.INFO)
