"""The warm search's worker job and its completion on the loop: the hot path of `IndexManager.search`, which
takes its read share synchronously and gives it back from the worker future's done callback
(docs/architecture.md#concurrency).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
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


def finish_search(entry: Any, job: concurrent.futures.Future, answer: asyncio.Future) -> None:
    """On the loop once the worker is done with the index (or the job was cancelled before it started)."""
    release_share(entry)
    if answer.done():  # the caller gave up meanwhile
        return
    if job.cancelled():
        answer.cancel()
    elif job.exception() is not None:
        answer.set_exception(job.exception())
    else:
        answer.set_result(job.result())
