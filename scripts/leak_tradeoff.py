"""Stale leaks against ranking quality as the restatement rule's thresholds move (docs/benchmarks.md#stale-leaks).

Runs `engram eval`'s collection once over both halves of the labelled set (`eval/set.json`, the configured
embedder), then re-ranks the collected candidates under each (min_similarity, min_relevance, min_keyword)
of a small grid, through the same steps as every door (`SpaceRunner.fused`: arrange, then explain.finish),
and prints per half the tuning objective (hit@1 + 0.1 MRR@10 over the answerable queries), the two leak
rates and updated-fact hit@1. Choose on the tuning half; read the held-out half only to report.

    .venv/bin/python scripts/leak_tradeoff.py [--similarity 0.55 0.6 0.65] [--relevance 0.5] [--keyword 0.5]
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import itertools
from pathlib import Path

import numpy as np

from engram.config import read_env
from engram.evaluation.labels import load_set
from engram.evaluation.metrics import hit_at_1
from engram.evaluation.report import stale_leaks
from engram.evaluation.runner import Run, evaluate, policies
from engram.evaluation.tuning import _objective
from engram.service.ranking import policy_for
from engram.service.supersession import Restatements


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--set", type=Path, default=Path("eval/set.json"))
    ap.add_argument("--similarity", type=float, nargs="+", default=[0.55, 0.58, 0.6, 0.62, 0.65])
    ap.add_argument("--relevance", type=float, nargs="+", default=[0.5, 0.6])
    ap.add_argument("--keyword", type=float, nargs="+", default=[0.5, 0.75])
    ap.add_argument(
        "--model", help="whose tuned policy the grid starts from (ranking.policy_for; default MiniLM's)"
    )
    args = ap.parse_args()
    settings = read_env()
    query_set = load_set(args.set)
    run = asyncio.run(evaluate(settings, query_set, query_set.select("all")))
    base = policies(policy_for(args.model))["engram"]
    halves = {h: [i for i, q in enumerate(run.queries) if q.split == h] for h in ("tuning", "heldout")}
    print("similarity relevance keyword | half: objective, above, returned with current, updated hit@1")
    for s, r, w in itertools.product(args.similarity, args.relevance, args.keyword):
        outcomes = run.rerank("grid", dataclasses.replace(base, restatements=Restatements(s, r, w)))
        cells = []
        for half, picked in halves.items():
            part = Run([run.queries[i] for i in picked], {"engram": [outcomes[i] for i in picked]})
            leaks = stale_leaks(part)
            updated = [
                hit_at_1(o.ranking, q.labels)
                for o, q in zip(part.outcomes["engram"], part.queries, strict=True)
                if q.category == "updated"
            ]
            cells.append(
                f"{half}: {_objective(part, part.outcomes['engram']):.4f}, {leaks['ranked_above_rate']:.3f}, "
                f"{leaks['returned_with_current_rate']:.3f}, {float(np.mean(updated)):.3f}"
            )
        print(f"{s:.2f} {r:.2f} {w:.2f} | " + " | ".join(cells), flush=True)


if __name__ == "__main__":
    main()
