"""Per query, the rank of the answer after each step of engram's ranking, beside pure vector's.

Runs `engram eval`'s collection once over one half of the labelled set (`eval/set.json`, the configured
embedder), then re-ranks the collected candidates (`Run.rerank`, the same steps as every door) with the
steps switched on one by one, and prints per answerable query of the chosen categories the rank (1-10,
"-" beyond) of the first answer under:
- vector, keyword: each side alone;
- fused: the policy's fusion and conversation steps only (no restatement step);
- engram-vector: cosine only, with the restatement step (runner.policies);
- plain-restate: the policy without the update-cue tiers (`Restatements.change_similarity` and
  `named_similarity` off: only the plain rule of supersession.py);
- engram: the whole policy.
A row is marked when engram ranks the answer lower than vector does; the first step where the rank falls
below vector's says which step moved it (docs/benchmarks.md#stale-leaks has one such reading).

    .venv/bin/python scripts/rank_steps.py [--split tuning] [--category vague paraphrase] [--all]
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
from pathlib import Path

from engram.config import read_env
from engram.evaluation.labels import load_set
from engram.evaluation.metrics import answers
from engram.evaluation.runner import evaluate
from engram.service.ranking import policy_for

STEPS = ("vector", "keyword", "fused", "engram-vector", "plain-restate", "engram")


def first_answer(ranking: list[str], labels: dict[str, int]) -> int | None:
    wanted = answers(labels)
    return next((rank for rank, key in enumerate(ranking, start=1) if key in wanted), None)


async def main(args: argparse.Namespace) -> None:
    query_set = load_set(args.set)
    queries = query_set.select(args.split)
    run = await evaluate(read_env(), query_set, queries)
    policy = policy_for(None if not run.runners else run.runners[0].ctx.embedder.name)
    run.rerank("fused", dataclasses.replace(policy, restatements=None))
    if policy.restatements is not None:
        plain = dataclasses.replace(policy.restatements, change_similarity=None, named_similarity=None)
        run.rerank("plain-restate", dataclasses.replace(policy, restatements=plain))
    else:
        run.outcomes["plain-restate"] = run.outcomes["fused"]
    print("category", "id", *STEPS, sep="\t")
    for i, query in enumerate(queries):
        if not query.labels or (args.category and query.category not in args.category):
            continue
        ranks = [first_answer(run.outcomes[step][i].ranking, query.labels) for step in STEPS]
        vector, engram = ranks[0] or 99, ranks[-1] or 99
        if engram <= vector and not args.all:
            continue
        mark = "below vector" if engram > vector else ""
        print(query.category, query.id, *(r if r is not None else "-" for r in ranks), mark, sep="\t")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", type=Path, default=Path("eval/set.json"))
    parser.add_argument("--split", default="tuning", choices=("tuning", "heldout", "all"))
    parser.add_argument("--category", nargs="*", default=[], help="categories to list (default all)")
    parser.add_argument("--all", action="store_true", help="every query, not only those below vector")
    asyncio.run(main(parser.parse_args()))
