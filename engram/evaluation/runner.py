"""Run a labelled query set: import its corpora into fresh spaces, rank every query with every system.

The data dir is a scratch directory (never the operator's), the rate limits are off (an evaluation is
one trusted caller issuing hundreds of searches), and everything else (embedder, index, keyword index,
fusion) is the configured service's own.
"""

from __future__ import annotations

import asyncio
import dataclasses
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from ..config import Settings
from ..errors import InvalidInput
from ..lifecycle import open_context
from ..service.imports import decode_lines, import_values
from ..service.ranking import DEFAULT_POLICY, RankingPolicy, policy_for
from .labels import Query, QuerySet
from .systems import ALPHAS, Candidates, Outcome, SpaceRunner, keys_by_row


@dataclass
class Run:
    queries: list[Query]
    outcomes: dict[str, list[Outcome]] = field(default_factory=dict)  # system -> one outcome per query
    candidates: list[Candidates] = field(default_factory=list)
    runners: list[SpaceRunner] = field(default_factory=list)

    def rerank(self, name: str, policy: RankingPolicy) -> list[Outcome]:
        """Outcomes of another policy over the collected candidates (no new searches: tuning grids)."""
        outcomes = [r.fused(c, policy) for r, c in zip(self.runners, self.candidates, strict=True)]
        self.outcomes[name] = outcomes
        return outcomes


def policies(default: RankingPolicy = DEFAULT_POLICY) -> dict[str, RankingPolicy]:
    found = {f"convex@{a}": RankingPolicy("convex", a, None) for a in ALPHAS}
    found["rrf"] = RankingPolicy("rrf", 0.0, None)
    found["engram"] = default
    # restatements only
    found["engram-vector"] = dataclasses.replace(default, fusion="convex", weight=1.0, chat_weight=None)
    return found


async def evaluate(
    settings: Settings,
    query_set: QuerySet,
    queries: list[Query],
    progress=None,
    explicit_updates: bool = False,
) -> Run:
    """`explicit_updates`: each updated-fact query's answer memory names the older statements it replaces
    in `attrs.supersedes` (as `remember(supersedes=)` would), so the explicit path is measured."""
    with tempfile.TemporaryDirectory(prefix="engram-eval-") as scratch:
        settings = dataclasses.replace(
            settings, data_dir=Path(scratch), search_rate=0.0, text_search_rate=0.0, metrics_port=0
        )
        async with open_context(settings, embedder=True) as ctx:
            runners = {}
            for name in sorted({q.corpus for q in queries}):
                runners[name] = await _load_corpus(ctx, query_set, name)
                if explicit_updates:
                    await _name_replacements(ctx, runners[name], [q for q in queries if q.corpus == name])
            run = Run(queries)
            # engram's policy for the model the corpora were embedded with (ranking.policy_for)
            chosen = policies(policy_for(ctx.embedder.name if ctx.embedder is not None else None))
            for system in ("vector", "keyword", *chosen):
                run.outcomes[system] = []
            for query in queries:
                runner = runners[query.corpus]
                run.outcomes["vector"].append(await runner.vector(query.text))
                run.outcomes["keyword"].append(await runner.keyword(query.text))
                found = await runner.candidates(query.text)
                run.candidates.append(found)
                run.runners.append(runner)
                for system, policy in chosen.items():
                    run.outcomes[system].append(runner.fused(found, policy))
                if progress:
                    progress(1)
            return run


async def _name_replacements(ctx, runner: SpaceRunner, queries: list[Query]) -> None:
    """Set `attrs.supersedes` of each updated-fact answer to the URIs of its older statements, before any
    search (attrs are not part of a record or its CID: docs/protocol.md#memory-records)."""
    row_of = {key: row for row, key in runner.key_of_row.items()}
    changes: dict[int, list[int]] = {}
    for query in queries:
        if query.category != "updated":
            continue
        answers = [row_of[k] for k, grade in query.labels.items() if grade == 2]
        stale = [row_of[k] for k, grade in query.labels.items() if grade == 1]
        for row in answers:
            changes.setdefault(row, []).extend(stale)

    def write(conn):
        uri = {row: u for row, u in conn.execute("SELECT row_id, uri FROM memories WHERE space_id = ?",
                                                  (runner.space.id,))}  # fmt: skip
        for row, older in changes.items():
            attrs = orjson.dumps({"supersedes": [uri[r] for r in dict.fromkeys(older)]}).decode()
            conn.execute("UPDATE memories SET attrs = ? WHERE row_id = ?", (attrs, row))

    if changes:
        await ctx.store.write(write)


async def _load_corpus(ctx, query_set: QuerySet, name: str) -> SpaceRunner:
    corpus = query_set.corpora[name]
    space = await ctx.services.spaces.create_hosted(f"eval-{name}")
    data = await asyncio.to_thread(corpus.path.read_bytes)
    numbered = ((n, line) for n, line in enumerate(data.splitlines(), start=1) if line.strip())
    report = await import_values(
        ctx.store, ctx.services.spaces, ctx.services.memories, space.uri, decode_lines(numbered)
    )
    if report.skipped:
        raise InvalidInput(f"corpus {name}: lines skipped on import: {report.skipped[:3]}", "BadQuerySet")
    space = await ctx.services.spaces.require(space.uri)
    key_of_row = await ctx.store.read(keys_by_row, space.uri, corpus.key_of_text())
    return SpaceRunner(ctx, space, key_of_row)
