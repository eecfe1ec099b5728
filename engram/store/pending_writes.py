"""`PendingWrite`: one write queued for the store's writer thread, and how its caller learns the outcome
(docs/internals.md#group-commit).

The caller awaits a plain asyncio future of its own loop. The writer settles a whole group's futures with
ONE `call_soon_threadsafe` after COMMIT (`settle`), instead of a concurrent future per write chained to an
asyncio one, each waking the loop on its own: under load that per-write machinery (a condition variable
per future, a wake-up of the loop per write) cost more of the loop's time than the write's own Python.

A caller cancelled while its write is still queued abandons it, and the writer skips it, so "cancelled"
never means "written anyway"; once the writer has claimed a write it runs and commits even if its caller
has gone away. The claim and the abandonment decide under one lock, so exactly one of them wins.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable, Iterable
from typing import Any

_QUEUED, _RUNNING, _SETTLED, _ABANDONED = range(4)
_claims = threading.Lock()


class PendingWrite:
    __slots__ = ("args", "fn", "future", "kwargs", "loop", "scope", "state")

    def __init__(
        self,
        fn: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        scope: str | None,
        loop: asyncio.AbstractEventLoop,
    ):
        self.fn, self.args, self.kwargs = fn, args, kwargs
        self.scope = scope  # the one space the write touches (`write_to`), or None: it may touch anything
        self.loop = loop
        self.future: asyncio.Future[Any] = loop.create_future()
        self.state = _QUEUED

    # -- the writer thread --------------------------------------------------------------------------------

    def claim(self) -> bool:
        """Start running it; False if its caller abandoned it first (the writer then skips it)."""
        with _claims:
            if self.state != _QUEUED:
                return False
            self.state = _RUNNING
            return True

    @property
    def running(self) -> bool:
        return self.state == _RUNNING

    @property
    def settled(self) -> bool:
        return self.state in (_SETTLED, _ABANDONED)

    def fail(self, exc: BaseException) -> None:
        """Its outcome is this error (sent to the caller at once: failures are the rare path)."""
        self.state = _SETTLED
        _call_soon(self.loop, _deliver, [(self, None, exc)])

    # -- the caller's loop --------------------------------------------------------------------------------

    def abandon(self) -> None:
        """The caller was cancelled: skip the write if the writer has not claimed it yet."""
        with _claims:
            if self.state == _QUEUED:
                self.state = _ABANDONED


def settle(done: Iterable[tuple[PendingWrite, Any]]) -> None:
    """Acknowledge committed writes: one loop callback per loop (in practice one) for the whole group."""
    by_loop: dict[asyncio.AbstractEventLoop, list[tuple[PendingWrite, Any, BaseException | None]]] = {}
    for write, result in done:
        write.state = _SETTLED
        by_loop.setdefault(write.loop, []).append((write, result, None))
    for loop, outcomes in by_loop.items():
        _call_soon(loop, _deliver, outcomes)


def _call_soon(loop: asyncio.AbstractEventLoop, fn: Callable[..., None], arg: Any) -> None:
    with contextlib.suppress(RuntimeError):  # the loop is closed: nobody is waiting any more
        loop.call_soon_threadsafe(fn, arg)


def _deliver(outcomes: list[tuple[PendingWrite, Any, BaseException | None]]) -> None:
    for write, result, exc in outcomes:
        if write.future.done():  # its caller was cancelled while the write ran
            continue
        if isinstance(exc, StopIteration):  # a future refuses it (it ends coroutines), as asyncio's does
            exc = RuntimeError(f"write raised StopIteration: {exc!r}")
        if exc is not None:
            write.future.set_exception(exc)
        else:
            write.future.set_result(result)
