"""The warm search's worker job and its completion on the loop: the hot path of `IndexManager.search`, which
takes its read share synchronously and gives it back from the worker's report on the loop
(docs/architecture.md#concurrency).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import numpy as np

from engram.search.filters import Filters
from engram.search.index import SearchResult, SpaceIndex


def search_job(
    index: SpaceIndex,
    query: np.ndarray,
    k: int,
    filters: Filters | None,
    deadline: float,
    then: Callable[[SearchResult], Any] | None,
) -> Any:
    result = index.search(query, k, filters, deadline)
    return then(result) if then is not None else result


def release_share(entry: Any) -> None:
    """Give back the read share of the manager's cache entry (`Entry` (engram/search/cache.py): its lock and busy count)."""
    entry.lock.release_read()
    entry.busy -= 1


def finish_search(entry: Any, answer: asyncio.Future, result: Any, error: BaseException | None) -> None:
    """On the loop once the worker is done with the index (`WorkerPool.dispatch`'s report, or the pool shut
    down before the job ran)."""
    release_share(entry)
    if answer.done():  # the caller gave up meanwhile
        return
    if isinstance(error, asyncio.CancelledError):
        answer.cancel()
    elif error is not None:
        answer.set_exception(error)
    else:
        answer.set_result(result)


def cancel_search(entry: Any, job: Any) -> None:
    """The caller gave up: a job that had not started never will, so its read share comes back now; a
    running one gives it back through `finish_search` when the worker is done with the index."""
    if job.cancel():
        release_share(entry)
