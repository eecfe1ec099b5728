"""The cyclic garbage collector tuned for serving (`engram serve` calls `tune_collector` once start-up is
done, in every serving process). Measured in docs/benchmarks.md#where-a-10k-search-spends-its-cpu."""

from __future__ import annotations

import gc

# Net new container objects that start a young collection (CPython's default is 700). At c=32 the count
# crossed 700 every ~25 searches (the objects of the requests in flight and of a batch's answers, built
# together), ~12 us of CPU per search in collections; nearly all of those objects are freed by reference
# counting a moment later, and a young collection costs what is still alive, so at 10,000 the collections
# become rare without each costing more (none in 5,000 searches at c=32).
YOUNG_GC_THRESHOLD = 10_000


def tune_collector() -> None:
    """Tune the cyclic garbage collector for serving, once start-up is done. Collect start-up's garbage, then
    `gc.freeze()` what remains (the app, the lexicons, the imported libraries: ~160k objects without the
    built-in embedder) so no later full collection walks it again: each one took ~0.08 s of CPU holding the
    GIL, every few thousand searches at c=32. And raise the young generation's threshold (above)."""
    gc.collect()
    gc.freeze()
    _gen0, gen1, gen2 = gc.get_threshold()
    gc.set_threshold(YOUNG_GC_THRESHOLD, gen1, gen2)
