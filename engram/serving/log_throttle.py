"""Log lines a flood could repeat thousands of times a second, at most once per interval each.

The case that needs it: when the process runs out of file descriptors, asyncio logs "socket.accept() out
of system resource" from its accept loop once per pending connection, every time it retries (about 150k
lines in 30 s were measured under a slow-connection flood). The event loop's exception handler is the
only hook for that message, so `install_accept_throttle` wraps it; the first occurrence is logged, later
ones are counted and summarised in the next line let through.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

ACCEPT_EXHAUSTED = "socket.accept() out of system resource"
DEFAULT_INTERVAL_S = 10.0


class Throttle:
    """Lets one event per key through per `interval_s`; counts the rest."""

    def __init__(self, interval_s: float = DEFAULT_INTERVAL_S, clock: Callable[[], float] = time.monotonic):
        self.interval_s = interval_s
        self._clock = clock
        self._next_at: dict[str, float] = {}
        self._suppressed: dict[str, int] = {}

    def allow(self, key: str) -> int | None:
        """None when this event is to be dropped; else how many were dropped since the last one allowed."""
        now = self._clock()
        if now < self._next_at.get(key, float("-inf")):
            self._suppressed[key] = self._suppressed.get(key, 0) + 1
            return None
        self._next_at[key] = now + self.interval_s
        return self._suppressed.pop(key, 0)


def throttled_warning(log: logging.Logger, throttle: Throttle, key: str, message: str, *args: Any) -> None:
    dropped = throttle.allow(key)
    if dropped is None:
        return
    if dropped:
        message += " (%d more like this since the last report)"
        args = (*args, dropped)
    log.warning(message, *args)


def _retry_after_close(context: dict[str, Any]) -> bool:
    """asyncio's accept loop, out of descriptors, stops reading the listening socket and schedules a
    `_start_serving` retry a second later, one per failed accept. When the server shuts down before those
    timers fire, each finds the socket closed (descriptor -1) and raises ValueError, which asyncio logs
    with a traceback: a shutdown artefact with nothing left to serve, not an error."""
    callback = getattr(context.get("handle"), "_callback", None)
    return getattr(callback, "__name__", "") == "_start_serving" and isinstance(
        context.get("exception"), ValueError
    )


def install_accept_throttle(
    loop: asyncio.AbstractEventLoop, log: logging.Logger, throttle: Throttle
) -> Callable[[], None]:
    """Wraps the loop's exception handler so the accept-exhaustion message is rate-limited (as one
    warning without a traceback); everything else passes through. Returns a function restoring the old
    handler."""
    previous = loop.get_exception_handler()

    def handle(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        if _retry_after_close(context):
            log.debug("accept retry after the listening socket closed: %s", context.get("exception"))
            return
        if context.get("message") == ACCEPT_EXHAUSTED:
            exc = context.get("exception")
            throttled_warning(
                log,
                throttle,
                ACCEPT_EXHAUSTED,
                "cannot accept connections: %s; raise `ulimit -n` or lower ENGRAM_MAX_CONNECTIONS",
                exc,
            )
            return
        if previous is not None:
            previous(loop, context)
        else:
            loop.default_exception_handler(context)

    loop.set_exception_handler(handle)
    return lambda: loop.set_exception_handler(previous)
