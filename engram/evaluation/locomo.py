"""`engram eval --bench locomo --data locomo10.json`: evidence retrieval on LoCoMo (Maharana et al., ACL
2024), the public long-conversation memory benchmark, through engram's own ranking paths.

The data (snap-research/locomo) carries no licence file, so it is never shipped or committed: a user or
a benchmark run fetches it and names the file. Accepted shapes: the published `locomo10.json` (a list of
samples, each with `conversation` = {speaker_a, speaker_b, session_<n>_date_time, session_<n>: [turns]}
and `qa`), or one sample object, or a sample whose sessions sit at its top level (the per-conversation
files of the repository's earlier zip).

Each conversation becomes one scratch space and each turn one memory: text `"<speaker>: <text>"` (an
image's caption appended as `[shares <caption>]`), createdAt the session's date (turn i of a session i
seconds after it, so the order holds), source the turn's dia_id, attrs.speaker the turn's speaker. A question's labels are its evidence
turns. Reported per category (1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop, 5 adversarial) and
over categories 1-4 (the answerable ones): evidence recall@1/5/10/20, hit@10 (any evidence turn in the
top 10), MRR@10 (first evidence turn) and nDCG@10 (every evidence turn gain 1), and the latency of each
path. Paths: `vector` (SearchService.search, what searchMemories answers), and `keyword` / `hybrid` /
`vector+` through EngramRanking.run (the pipeline behind MCP recall, GPTBots and the console), plus
`hybrid-plain` (the same fusion without the restatement step), and `hybrid@<w>` (the engram policy at
other fusion weights, its `chat_weight` too, over the same candidates: for choosing the weights on the
tuning half).

Split: the conversations at even positions are the tuning half, those at odd positions the held-out
half (`--split`, as for the labelled sets); only the chosen half's conversations are imported.
"""

from __future__ import annotations

import asyncio
import dataclasses
import math
import re
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import orjson

from ..config import Settings
from ..errors import InvalidInput
from ..lifecycle import open_context
from ..service.hybrid import Scope, TextSearch
from ..service.imports import import_values
from ..service.ranking import policy_for
from ..service.search import SearchQuery

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
ANSWERABLE = (1, 2, 3, 4)
DEPTH = 20
WEIGHTS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8)
PATHS = ("vector", "keyword", "hybrid", "hybrid-plain", "vector+", *(f"hybrid@{w}" for w in WEIGHTS))
_SESSION = re.compile(r"^session_(\d+)$")
_DIA = re.compile(r"D\d+:\d+")


@dataclasses.dataclass(frozen=True)
class Turn:
    dia_id: str
    text: str
    created_at: str
    speaker: str


@dataclasses.dataclass(frozen=True)
class Question:
    conversation: int
    text: str
    category: int
    evidence: frozenset[str]


def load(path: Path) -> tuple[list[list[Turn]], list[Question]]:
    """(turns of each conversation, every question that names evidence turns); InvalidInput on bad data."""
    try:
        data = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError) as err:
        raise InvalidInput(f"{path}: not a readable JSON file ({err})", "BadBenchData") from None
    samples = data if isinstance(data, list) else [data]
    conversations, questions = [], []
    for n, sample in enumerate(samples):
        if not isinstance(sample, dict) or not isinstance(sample.get("qa"), list):
            raise InvalidInput(f"{path}: sample {n} has no qa list", "BadBenchData")
        conversation = sample.get("conversation", sample)
        turns = _turns(conversation, n)
        known = {t.dia_id for t in turns}
        for qa in sample["qa"]:
            evidence = frozenset(e for item in qa.get("evidence") or () for e in _DIA.findall(str(item)))
            if isinstance(qa, dict) and qa.get("question") and evidence & known:
                questions.append(Question(n, qa["question"], int(qa.get("category", 0)), evidence & known))
        conversations.append(turns)
    if not questions:
        raise InvalidInput(f"{path}: no question names an evidence turn", "BadBenchData")
    return conversations, questions


def _turns(conversation: dict, n: int) -> list[Turn]:
    sessions = sorted(int(m[1]) for key in conversation if (m := _SESSION.match(key)))
    turns = []
    for s in sessions:
        start = _session_time(conversation.get(f"session_{s}_date_time"), n, s)
        for i, turn in enumerate(conversation[f"session_{s}"] or ()):
            text = f"{turn.get('speaker', '?')}: {turn.get('text', '')}"
            if turn.get("blip_caption"):
                text += f" [shares {turn['blip_caption']}]"
            stamp = (start + timedelta(seconds=i)).isoformat(timespec="milliseconds").replace("+00:00", "Z")
            turns.append(Turn(str(turn.get("dia_id")), text, stamp, str(turn.get("speaker", "?"))))
    if not turns:
        raise InvalidInput(f"conversation {n} has no turns", "BadBenchData")
    return turns


def _session_time(value, n: int, s: int) -> datetime:
    """LoCoMo's "1:56 pm on 8 May, 2023", read as UTC (the data gives no zone)."""
    try:
        return datetime.strptime(str(value).strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)
    except ValueError:
        raise InvalidInput(
            f"conversation {n}, session {s}: unreadable date {value!r}", "BadBenchData"
        ) from None


def in_split(conversation: int, split: str) -> bool:
    return split == "all" or (conversation % 2 == 0) == (split == "tuning")


async def run(
    settings: Settings, path: Path, progress: Callable[[int], None] | None = None, split: str = "all"
) -> dict:
    conversations, questions = load(path)
    questions = [q for q in questions if in_split(q.conversation, split)]
    with tempfile.TemporaryDirectory(prefix="engram-locomo-") as scratch:
        settings = dataclasses.replace(
            settings, data_dir=Path(scratch), search_rate=0.0, text_search_rate=0.0, metrics_port=0
        )
        async with open_context(settings, embedder=True) as ctx:
            spaces = []
            for n, turns in enumerate(conversations):
                if not in_split(n, split):
                    spaces.append(None)
                    continue
                space = await ctx.services.spaces.create_hosted(f"locomo-{n}")
                lines = [(i + 1, {"text": t.text, "createdAt": t.created_at, "source": t.dia_id,
                                  "attrs": {"speaker": t.speaker}})
                         for i, t in enumerate(turns)]  # fmt: skip
                report = await import_values(
                    ctx.store, ctx.services.spaces, ctx.services.memories, space.uri, lines
                )
                if report.skipped:
                    raise InvalidInput(f"conversation {n}: turns skipped on import: {report.skipped[:3]}")
                space = await ctx.services.spaces.require(space.uri)
                spaces.append(space)
            rankings: dict[str, list[list[str]]] = {p: [] for p in PATHS}
            latency: dict[str, list[float]] = {p: [] for p in PATHS}
            policy = policy_for(ctx.embedder.name)
            policies = {"hybrid-plain": dataclasses.replace(policy, restatements=None)} | {
                f"hybrid@{w}": dataclasses.replace(policy, weight=w, chat_weight=None) for w in WEIGHTS
            }
            for q in questions:
                space = spaces[q.conversation]
                for path_name in ("vector", "keyword", "hybrid", "vector+"):
                    started = time.perf_counter()
                    hits = await _search(ctx, space, q.text, path_name)
                    latency[path_name].append(time.perf_counter() - started)
                    rankings[path_name].append([m.source for m in hits])
                # the other policies rank one collection of candidates (timed as collection + their rank)
                ranking = ctx.services.ranking
                started = time.perf_counter()
                both = TextSearch(q.text, DEPTH, weight=0.5, event=policy.event_query)
                found = await ranking.hybrid.candidates([Scope(space)], both)
                collected = time.perf_counter() - started
                for name, chosen in policies.items():
                    started = time.perf_counter()
                    ranked = await ranking.rank(
                        found.similarity,
                        found.keyword,
                        found.owner,
                        DEPTH,
                        chosen,
                        found.adjacent,
                        found.others,
                        found.vectors,
                        text=q.text,
                        dated=found.dated,
                    )
                    latency[name].append(collected + time.perf_counter() - started)
                    rankings[name].append([h.memory.source for h in ranked.hits])
                if progress:
                    progress(1)
            return report_of(questions, rankings, latency, ctx.embedder.name)


async def _search(ctx, space, text: str, path: str) -> list:
    if path == "vector":
        found = await ctx.services.search.search(space, SearchQuery(q=text, limit=DEPTH))
        return [m for m, _ in found.hits]
    query = TextSearch(text, DEPTH)
    mode = {"keyword": "keyword", "hybrid": "hybrid", "vector+": "vector"}[path]
    return [h.memory for h in (await ctx.services.ranking.run([Scope(space)], query, mode)).hits]


def metrics(ranking: list[str], evidence: frozenset[str]) -> dict[str, float]:
    found = {k: len(evidence & set(ranking[:k])) / len(evidence) for k in (1, 5, 10, 20)}
    first = next((rank for rank, key in enumerate(ranking[:10], start=1) if key in evidence), None)
    dcg = sum(1 / math.log2(rank + 1) for rank, key in enumerate(ranking[:10], start=1) if key in evidence)
    ideal = sum(1 / math.log2(rank + 1) for rank in range(1, min(len(evidence), 10) + 1))
    return {
        **{f"recall@{k}": v for k, v in found.items()},
        "hit@10": float(first is not None),
        "mrr@10": 1.0 / first if first else 0.0,
        "ndcg@10": dcg / ideal,
    }


def report_of(questions: list[Question], rankings, latency, model: str) -> dict:
    table: dict[str, dict] = {}
    for path, ranked in rankings.items():
        per = [metrics(r, q.evidence) for r, q in zip(ranked, questions, strict=True)]
        groups = {"answerable": [m for m, q in zip(per, questions, strict=True) if q.category in ANSWERABLE]}
        for category, name in CATEGORIES.items():
            groups[name] = [m for m, q in zip(per, questions, strict=True) if q.category == category]
        table[path] = {
            group: {key: float(np.mean([m[key] for m in found])) for key in found[0]} | {"n": len(found)}
            for group, found in groups.items()
            if found
        }
    times = {
        path: {"p50_ms": float(np.percentile(v, 50) * 1000), "p95_ms": float(np.percentile(v, 95) * 1000)}
        for path, v in latency.items()
    }
    return {"model": model, "questions": len(questions), "metrics": table, "latency": times}


def markdown(result: dict) -> str:
    lines = [f"LoCoMo evidence retrieval, {result['questions']} questions, model {result['model']}", "",
             "| path | group | n | R@1 | R@5 | R@10 | R@20 | hit@10 | MRR@10 | nDCG@10 |",
             "|---|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for path, groups in result["metrics"].items():
        for group, m in groups.items():
            cells = [
                f"{m[k]:.3f}"
                for k in ("recall@1", "recall@5", "recall@10", "recall@20", "hit@10", "mrr@10", "ndcg@10")
            ]
            lines.append(f"| {path} | {group} | {m['n']} | " + " | ".join(cells) + " |")
    lines += ["", "| path | p50 ms | p95 ms |", "|---|---|---|"]
    for path, t in result["latency"].items():
        lines.append(f"| {path} | {t['p50_ms']:.1f} | {t['p95_ms']:.1f} |")
    return "\n".join(lines)


def run_sync(settings: Settings, path: Path, progress=None, split: str = "all") -> dict:
    return asyncio.run(run(settings, path, progress, split))
