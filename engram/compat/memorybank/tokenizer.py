"""The cl100k_base tokenizer, loaded from ranks shipped inside engram (never downloaded at run time).

tiktoken's wheels carry the BPE code but not the rank files; `tiktoken.get_encoding("cl100k_base")` fetches
them over the network on first use, which engram must never do. The ranks file is vendored gzipped under
`data/` with tiktoken's MIT licence, checked against the sha256 tiktoken itself pins for it, and handed to
tiktoken's public `Encoding` constructor with the same split pattern and special tokens.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
from functools import cache
from importlib import resources

import tiktoken

RANKS_FILE = "cl100k_base.tiktoken.gz"
# The digest tiktoken pins for cl100k_base.tiktoken (docs/memorybank.md#chunking): same file, same ranks.
RANKS_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|"""
    r"""\s+(?!\S)|\s"""
)
SPECIAL_TOKENS = {
    "<|endoftext|>": 100257,
    "<|fim_prefix|>": 100258,
    "<|fim_middle|>": 100259,
    "<|fim_suffix|>": 100260,
    "<|endofprompt|>": 100276,
}


def load_ranks() -> dict[bytes, int]:
    raw = gzip.decompress(
        resources.files("engram.compat.memorybank").joinpath("data", RANKS_FILE).read_bytes()
    )
    if hashlib.sha256(raw).hexdigest() != RANKS_SHA256:
        raise RuntimeError(f"{RANKS_FILE} does not match the cl100k_base ranks (sha256 mismatch)")
    ranks = {}
    for line in raw.splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks


@cache
def cl100k_base() -> tiktoken.Encoding:
    """The encoding (built once per process: about 0.3 s and 20 MB)."""
    return tiktoken.Encoding(
        "cl100k_base", pat_str=PATTERN, mergeable_ranks=load_ranks(), special_tokens=SPECIAL_TOKENS
    )
