"""A real-text corpus without downloading anything: docstrings of the packages installed in this Python
(module, class and function docstrings, first paragraph, read with `ast` so nothing is imported), embedded
with engram's built-in MiniLM ONNX model. Deterministic for a given set of installed packages; the
embeddings are cached in the temp directory because embedding 10k texts takes minutes on 2 cores."""

from __future__ import annotations

import ast
import hashlib
import random
import re
import sysconfig
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from engram.embed.builtin import load_builtin

_SPACES = re.compile(r"\s+")


def docstrings() -> list[str]:
    """Every distinct first paragraph (40-600 characters) of the installed docstrings, in a seeded shuffle."""
    seen: set[str] = set()
    found: list[str] = []
    for path in sorted(Path(sysconfig.get_paths()["purelib"]).rglob("*.py")):
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError, ValueError, OSError):
            continue
        for node in ast.walk(tree):
            if not isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            doc = ast.get_docstring(node)
            if not doc:
                continue
            text = _SPACES.sub(" ", doc.split("\n\n", 1)[0]).strip()
            if 40 <= len(text) <= 600 and text not in seen:
                seen.add(text)
                found.append(text)
    random.Random(7).shuffle(found)
    return found


def embedded_corpus(size: int, queries: int, threads: int = 2) -> tuple[np.ndarray, np.ndarray, int]:
    """(stored vectors, query vectors, distinct docstrings installed): `size` docstrings embedded as documents, and
    `queries` other docstrings (never stored) embedded as queries; unit float32 rows."""
    found = docstrings()
    if len(found) < size + queries:
        raise SystemExit(f"only {len(found)} docstrings installed; ask for fewer")
    texts = found[: size + queries]
    key = hashlib.sha256("\n".join(texts).encode()).hexdigest()[:16]
    cache = Path(tempfile.gettempdir()) / f"engram-bench-docstrings-{size}-{queries}-{key}.npz"
    if cache.exists():
        saved = np.load(cache)
        return saved["stored"], saved["queries"], len(found)
    embedder = load_builtin()
    batches = [texts[i : i + 64] for i in range(0, size, 64)]
    batches[-1] = texts[(len(batches) - 1) * 64 : size]
    with ThreadPoolExecutor(threads) as pool:  # ONNX releases the GIL: one batch per core
        stored = np.vstack(list(pool.map(lambda b: embedder.embed(b, "document"), batches)))
    asked = embedder.embed(texts[size:], "query")
    np.savez(cache, stored=stored, queries=asked)
    return stored, asked, len(found)
