"""Fusion of the vector and keyword candidates into one relevance in [0, 1]: convex (`fuse`, the default) and
reciprocal rank fusion (`rrf_fuse`, a ranking policy's alternative, engram/service/ranking.py).

Convex fusion of the two scores (docs/compat.md "Scores"):

    score = w * similarity + (1 - w) * keyword

- `similarity` is the cosine similarity clipped to [0, 1], kept absolute (not min-max normalised over
  the candidates, unlike the convex fusion it follows): a minimum score such as GPTBots' doc_correlation
  must still reject a result set that is uniformly poor, and at w = 1 the score is exactly the similarity
  a vector search reports.
- `keyword` is the BM25 score as a share of the most the query can attain (engram/search/keyword_index.py),
  in [0, 1], also absolute: a memory sharing only a common word of the query earns little, however weak
  the other candidates are (an earlier version divided by the best candidate's BM25, so any memory
  sharing "what" or "my" got the whole keyword share when nothing better matched). Measured against
  powers of the share (which would favour full matches) and RRF: the plain share ranks best
  (docs/benchmarks.md#retrieval-quality-engram-eval).
- A candidate missing one score (no vector under the space's model, or no query word) counts 0 for it.
Ties go to the lower row id (the older memory), so the order is deterministic.

Reciprocal rank fusion (RRF) of the two candidate lists:

    score = sum over the lists a candidate is in of 1 / (K + rank),  rank counted from 1

divided by 2 / (K + 1), the score of a candidate first in both lists, so it lies in [0, 1] like the convex
score. RRF ignores score scales entirely, which is its appeal and its cost: a memory far ahead on one side
gains no more than one just ahead. K = 60 as in the original paper (Cormack et al., SIGIR 2009).

Context (`in_context`, after either fusion): in a conversation the turn that answers a question often
shares none of its words: "How did you get into watercolor painting?" is followed by "My friend got me
into it". So a memory's score is raised to a share of its neighbours' (the memories written just before
and after it, engram/search/keyword_index.py `CONVERSATION_GAP_MS`):

    score = max(own, reply x score of the one before, lead x score of the one after)

`reply` < 1 and `lead` < 1, so a memory never overtakes the neighbour it borrows from, and the score
stays in [0, 1]. The context reaches `reach` turns: each pass carries the raised scores one turn on. Memories written apart (notes, documents) have no neighbours and keep their scores.

When (`anchored`, for a question asking when, before the speaker step): the context's lead share is the
policy's `when_lead`, and a turn that says when (it names a date, written or resolved: the `@date` term of
engram/search/dates.py) near one of the leading memories is raised to a share of that memory's score:

    score = max(own, share x score of a leading memory up to `reach` turns before or after it)

In a conversation the time of an event is often told once, a turn or two from where the event is named
("Guess what, something great happened this Tuesday!" - "Tell me!" - "I took first place at the city chess
open"), and the context's share of a share reaches that far only weakly (docs/benchmarks.md#locomo).

Speaker (`by_speaker`, last): a question about a person is answered by what that person said ("What did
Caroline research?" is answered by Caroline's turns, not by Melanie asking "how's the research going,
Caroline?"). When the query names a speaker of the space (attrs.speaker, engram/search/keyword_index.py),
the score of each turn said by someone else is multiplied by `other` (< 1); memories without a speaker
are untouched. Not when the named speaker's own turns barely match the query's words (`speaker_matches`):
a question may name the wrong person on purpose ("What did Melanie research?" when Caroline did: LoCoMo's
adversarial category), and then the words, not the name, say whose turns answer. The step is taken when
the best keyword share among the named speaker's turns is at least `share` x the best among the others'
(chosen on LoCoMo's tuning half: docs/benchmarks.md#locomo).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

import numpy as np

K = 60  # RRF's rank offset


def fuse(
    similarity: Mapping[int, float], keyword: Mapping[int, float], weight: float
) -> list[tuple[int, float]]:
    """(row id, fused score) of every candidate in either map, best first."""
    if not 0.0 <= weight <= 1.0:
        raise ValueError(f"weight must be in [0, 1], got {weight}")
    # numpy over the candidate arrays, not a tuple per candidate: the same float64 operations in the same
    # order (clip, two products, one sum), so the same scores bit for bit, and the same order (lexsort by
    # score descending, then row id), at a fraction of the cost for the ~200-300 candidates of a query
    rows = list(similarity.keys() | keyword.keys())
    ids = np.array(rows, dtype=np.int64)
    sim = np.clip(np.array([similarity.get(r, 0.0) for r in rows], dtype=np.float64), 0.0, 1.0)
    kw = np.clip(np.array([keyword.get(r, 0.0) for r in rows], dtype=np.float64), 0.0, 1.0)
    score = weight * sim + (1.0 - weight) * kw
    order = np.lexsort((ids, -score))
    return list(zip(ids[order].tolist(), score[order].tolist(), strict=True))


def ranks(scores: Mapping[int, float]) -> dict[int, int]:
    """1-based rank of each row, best score first, ties to the lower row id (the order fuse() uses)."""
    order = sorted(scores.items(), key=lambda item: (-item[1], item[0]))
    return {row_id: rank for rank, (row_id, _) in enumerate(order, start=1)}


def rrf_fuse(
    similarity: Mapping[int, float], keyword: Mapping[int, float], k: int = K
) -> list[tuple[int, float]]:
    """(row id, fused score in [0, 1]) of every candidate in either map, best first."""
    top = 2.0 / (k + 1)
    fused: dict[int, float] = {}
    for side in (similarity, {r: s for r, s in keyword.items() if s > 0}):
        for row_id, rank in ranks(side).items():
            fused[row_id] = fused.get(row_id, 0.0) + 1.0 / (k + rank)
    return sorted(((r, s / top) for r, s in fused.items()), key=lambda item: (-item[1], item[0]))


def in_context(
    fused: Sequence[tuple[int, float]],
    adjacent: Mapping[int, tuple[int | None, int | None]],
    reply: float,
    lead: float,
    reach: int = 1,
    trace: dict[int, tuple[int, float]] | None = None,
) -> list[tuple[int, float]]:
    """`fused` (best first) with each memory's score raised to `reply` x its predecessor's and `lead` x
    its successor's (adjacent: {row: (before, after)}), neighbours not yet ranked included, best first.
    Each of `reach` passes carries the raised scores one turn further (reach 2: the turn after the
    answer to a question gets reply x reply of the question's score). `trace`, when given, receives
    {raised row: (the neighbour it borrowed from, the share)} for the explanations (explain.py): the
    neighbour of the last raise, one dict write per raise, nothing when no trace is asked for."""
    if not adjacent or (reply <= 0 and lead <= 0):
        return list(fused)
    score = dict(fused)
    for _ in range(reach):
        raised = dict(score)
        for row, (before, after) in adjacent.items():
            own = score.get(row, 0.0)
            if own <= 0:
                continue
            if after is not None and reply * own > raised.get(after, 0.0):
                raised[after] = reply * own
                if trace is not None:
                    trace[after] = (row, reply)
            if before is not None and lead * own > raised.get(before, 0.0):
                raised[before] = lead * own
                if trace is not None:
                    trace[before] = (row, lead)
        score = raised
    return sorted(score.items(), key=lambda item: (-item[1], item[0]))


def anchored(
    fused: Sequence[tuple[int, float]],
    adjacent: Mapping[int, tuple[int | None, int | None]],
    dated: Collection[int],
    share: float,
    reach: int,
    top: int,
    trace: dict[int, tuple[int, float]] | None = None,
) -> list[tuple[int, float]]:
    """`fused` (best first) with each `dated` turn (one that says when) up to `reach` turns before or after
    one of the `top` leading memories (adjacent: {row: (before, after)}) raised to `share` x that memory's
    score, when that is more than its own; best first. `trace`, as for in_context, gets {raised row: (the
    leading memory, share)}."""
    if not dated or not adjacent or share <= 0 or reach <= 0:
        return list(fused)
    score = dict(fused)
    for row, lead in fused[:top]:
        for side in (0, 1):
            turn: int | None = row
            for _ in range(reach):
                pair = adjacent.get(turn) if turn is not None else None
                turn = pair[side] if pair is not None else None
                if turn is None:
                    break
                if turn in dated and share * lead > score.get(turn, 0.0):
                    score[turn] = share * lead
                    if trace is not None:
                        trace[turn] = (row, share)
    return sorted(score.items(), key=lambda item: (-item[1], item[0]))


def by_speaker(
    fused: Sequence[tuple[int, float]], others: Collection[int], other: float
) -> list[tuple[int, float]]:
    """`fused` with the scores of `others` (turns said by someone the query does not name) x `other`."""
    if not others or other >= 1.0:
        return list(fused)
    scored = [(row, score * other if row in others else score) for row, score in fused]
    return sorted(scored, key=lambda item: (-item[1], item[0]))


def speaker_matches(keyword: Mapping[int, float], others: Collection[int], share: float) -> bool:
    """Whether the turns not in `others` (the named speaker's, and memories without a speaker) hold a keyword
    share of at least `share` x the best share among `others`: the speaker step's condition."""
    named = max((score for row, score in keyword.items() if row not in others), default=0.0)
    other = max((score for row, score in keyword.items() if row in others), default=0.0)
    return named >= share * other
