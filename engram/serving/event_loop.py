"""`ENGRAM_EVENT_LOOP`: which event loop `engram serve` runs on.

uvloop (libuv under asyncio's API) does the per-connection work of the loop (socket reads and writes,
transports, timers, callbacks) in C. On the signed-search hot path that is a fixed cost per request, so
it lowers the server's CPU per request (docs/benchmarks.md#throughput). engram's own code uses only the
public asyncio API (signal handlers, `reuse_port` on `create_server`, `call_soon_threadsafe`, timers), so
it runs unchanged on both loops; `asyncio` stays available for platforms without uvloop and to rule the
loop out when debugging.
"""

from __future__ import annotations

import asyncio
import importlib.util
from collections.abc import Callable, Coroutine
from typing import Any

EVENT_LOOPS = ("uvloop", "asyncio")


def uvloop_available() -> bool:
    return importlib.util.find_spec("uvloop") is not None


def default_event_loop() -> str:
    return "uvloop" if uvloop_available() else "asyncio"


def loop_factory(name: str) -> Callable[[], asyncio.AbstractEventLoop]:
    if name == "uvloop":
        import uvloop

        return uvloop.new_event_loop
    return asyncio.new_event_loop


def run_on(name: str, main: Coroutine[Any, Any, Any]) -> Any:
    """`asyncio.run(main)` on the named loop (asyncio.Runner takes a loop factory from Python 3.11 on;
    asyncio.run only from 3.12)."""
    with asyncio.Runner(loop_factory=loop_factory(name)) as runner:
        return runner.run(main)
