"""`engram eval [set.json]`: retrieval quality of every ranking system on a labelled query set."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from tqdm import tqdm

from ..config import Settings
from ..errors import EngramError
from ..evaluation.labels import SPLITS, load_set
from ..evaluation.report import markdown, summary
from ..evaluation.runner import evaluate
from ..evaluation.tuning import tune
from .errors import CliError
from .output import print_json

DEFAULT_SET = Path("eval/set.json")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "eval",
        help="measure retrieval quality on a labelled query set",
        description="Import the set's corpora into scratch spaces (the configured embedder; nothing is "
        "written to the data dir) and rank each query with vector, keyword, hybrid (convex at several "
        "weights, RRF) and engram's own ranking. Prints hit@1, recall@5, MRR@10, nDCG@10 per category, "
        "paired bootstrap 95 % CIs of each system's difference from vector, and the no-answer scores.",
    )
    p.add_argument(
        "set", nargs="?", type=Path, default=DEFAULT_SET, help=f"query set (default {DEFAULT_SET})"
    )
    p.add_argument(
        "--set",
        dest="set_option",
        type=Path,
        metavar="SET",
        help="the query set, as an option (e.g. eval/multilingual.json, docs/benchmarks.md#multilingual)",
    )
    p.add_argument("--split", choices=SPLITS, default="heldout", help="which half to score (default heldout)")
    p.add_argument("--tune", action="store_true", help="also search fusion/restatement/confidence settings")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument(
        "--explicit-updates",
        action="store_true",
        help="updated-fact answers name what they replace (attrs.supersedes): measure the explicit path",
    )
    p.add_argument(
        "--bench",
        choices=("locomo",),
        help="a public benchmark instead of a labelled set: locomo needs --data (docs/benchmarks.md#locomo)",
    )
    p.add_argument("--data", type=Path, help="the benchmark's data file, e.g. locomo10.json (never shipped)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    if args.bench == "locomo":
        return _run_locomo(args, settings)
    if args.set_option is not None:
        if args.set != DEFAULT_SET and args.set != args.set_option:
            raise CliError("give the query set once: as an argument or with --set", 2)
        args.set = args.set_option
    if not args.set.is_file():
        raise CliError(f"{args.set}: no such file")
    try:
        query_set = load_set(args.set)
    except (EngramError, KeyError, ValueError) as err:
        raise CliError(f"{args.set}: {getattr(err, 'message', err)}", 2) from None
    queries = query_set.select(args.split)
    if not queries:
        raise CliError(f"{args.set}: no queries in the {args.split} split", 2)

    async def work():
        with tqdm(total=len(queries), unit="query", desc="evaluating", disable=None, file=sys.stderr) as bar:
            return await evaluate(
                settings, query_set, queries, progress=bar.update, explicit_updates=args.explicit_updates
            )

    result_run = asyncio.run(work())
    tuned = tune(result_run) if args.tune else None
    result = summary(result_run)
    if tuned is not None:
        result["tuned"] = tuned
    if args.json:
        print_json(result)
        return 0
    print(f"{args.set} ({args.split} split, {len(queries)} queries)\n")
    print(markdown(result))
    if tuned is not None:
        print("\nBest on this split:", tuned)
    return 0


def _run_locomo(args: argparse.Namespace, settings: Settings) -> int:
    from ..evaluation import locomo

    if args.data is None or not args.data.is_file():
        raise CliError("--bench locomo needs --data <locomo10.json> (an existing file)", 2)
    try:
        _, questions = locomo.load(args.data)
        questions = [q for q in questions if locomo.in_split(q.conversation, args.split)]
        if not questions:
            raise CliError(f"{args.data}: no questions in the {args.split} half (even conversations tune)", 2)
    except EngramError as err:
        raise CliError(err.message, 2) from None
    with tqdm(total=len(questions), unit="question", desc="locomo", disable=None, file=sys.stderr) as bar:
        result = locomo.run_sync(settings, args.data, progress=bar.update, split=args.split)
    if args.json:
        print_json(result)
    else:
        print(locomo.markdown(result))
    return 0
