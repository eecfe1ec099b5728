"""A labelled query set: its corpora (JSONL files `engram import` reads) and its queries.

The set is a JSON file naming the corpora (paths relative to it) and a queries JSONL file, or a list of
them. Each query line:
`{"id", "corpus", "category", "query", "answer": "<text>", "related": ["<text>", ...]}`, where each text
is a substring that must occur in exactly one memory of the corpus: the answer gets grade 2, related
memories grade 1. A query without `answer` is a no-answer query. Queries are split into a tuning and a
held-out half per category and file, by a hash of the id, so the split is fixed however the file is
ordered and whatever other files the set lists.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from ..errors import InvalidInput

# cross-lingual: the query is in another language than its answer (eval/multilingual.json)
CATEGORIES = ("paraphrase", "identifier", "name", "updated", "vague", "cross-lingual", "no-answer")
SPLITS = ("tuning", "heldout", "all")


@dataclass(frozen=True)
class Corpus:
    name: str
    path: Path
    texts: tuple[str, ...]  # line i's text; memory key f"{name}#{i}"

    def key_of_text(self) -> dict[str, str]:
        return {text: f"{self.name}#{i}" for i, text in enumerate(self.texts)}


@dataclass(frozen=True)
class Query:
    id: str
    corpus: str
    category: str
    text: str
    labels: dict[str, int] = field(default_factory=dict)  # memory key -> grade
    split: str = "tuning"


@dataclass(frozen=True)
class QuerySet:
    corpora: dict[str, Corpus]
    queries: list[Query]

    def select(self, split: str) -> list[Query]:
        return [q for q in self.queries if split == "all" or q.split == split]


def load_set(path: Path) -> QuerySet:
    spec = orjson.loads(path.read_bytes())
    corpora = {name: _load_corpus(name, path.parent / rel) for name, rel in spec["corpora"].items()}
    queries = []
    files = spec["queries"] if isinstance(spec["queries"], list) else [spec["queries"]]
    for name in files:  # one file or several (eval/set.json: the original set and eval/casual.jsonl)
        mine = []
        for n, line in enumerate((path.parent / name).read_bytes().splitlines(), start=1):
            if line.strip():
                mine.append(_parse_query(orjson.loads(line), corpora, n))
        queries += _split(mine)  # per file: adding a file never moves another file's queries between halves
    ids = [q.id for q in queries]
    if len(set(ids)) != len(ids):
        raise InvalidInput("query ids must be unique", "BadQuerySet")
    return QuerySet(corpora, queries)


def _load_corpus(name: str, path: Path) -> Corpus:
    texts = tuple(orjson.loads(line)["text"] for line in path.read_bytes().splitlines() if line.strip())
    if len(set(texts)) != len(texts):
        raise InvalidInput(f"corpus {name}: memory texts must be unique", "BadQuerySet")
    return Corpus(name, path, texts)


def _parse_query(obj: dict, corpora: dict[str, Corpus], line: int) -> Query:
    corpus = corpora.get(obj.get("corpus"))
    if corpus is None or obj.get("category") not in CATEGORIES or not obj.get("query"):
        raise InvalidInput(f"query line {line}: needs a known corpus, category and a query", "BadQuerySet")
    labels = {}
    for grade, snippets in ((1, obj.get("related") or []), (2, [obj["answer"]] if obj.get("answer") else [])):
        for snippet in snippets:
            labels[_find(corpus, snippet, line)] = grade
    if (obj["category"] == "no-answer") != (not labels):
        raise InvalidInput(f"query line {line}: only no-answer queries lack an answer", "BadQuerySet")
    return Query(obj.get("id") or f"q{line}", corpus.name, obj["category"], obj["query"], labels)


def _find(corpus: Corpus, snippet: str, line: int) -> str:
    found = [i for i, text in enumerate(corpus.texts) if snippet in text]
    if len(found) != 1:
        raise InvalidInput(
            f"query line {line}: {snippet!r} occurs in {len(found)} memories of {corpus.name}, not one",
            "BadQuerySet",
        )
    return f"{corpus.name}#{found[0]}"


def _split(queries: list[Query]) -> list[Query]:
    out = []
    for category in CATEGORIES:
        mine = sorted((q for q in queries if q.category == category), key=lambda q: _digest(q.id))
        for i, q in enumerate(mine):
            out.append(Query(q.id, q.corpus, q.category, q.text, q.labels, SPLITS[i % 2]))
    return out


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()
