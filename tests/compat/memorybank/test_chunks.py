"""The chunker against the retrieval plugin's rule (docs/memorybank.md "Chunking"), on real cl100k_base."""

from __future__ import annotations

import hashlib

import pytest
from support.memorybank_texts import MULTILINGUAL
from tiktoken._educational import SimpleBytePairEncoding

from engram.compat.memorybank import chunks as chunking
from engram.compat.memorybank.chunks import chunk_ids, split_text
from engram.compat.memorybank.tokenizer import PATTERN, cl100k_base, load_ranks


def test_tokenizer_matches_tiktokens_reference_bpe():
    # tiktoken's pure-Python BPE (a separate implementation of the merge loop) over the same ranks.
    sample = "Memory 記憶 mémoire Память الذاكرة 기억 🙂 <|endoftext|> 12345 don't\r\n  x"
    reference = SimpleBytePairEncoding(pat_str=PATTERN, mergeable_ranks=load_ranks())
    assert cl100k_base().encode(sample, disallowed_special=()) == reference.encode(sample, visualise=None)
    assert cl100k_base().encode("hello world") == [15339, 1917]  # the well-known cl100k_base ids


def test_long_multilingual_document_golden_boundaries():
    pieces = split_text(MULTILINGUAL)
    assert len(pieces) == 15
    assert pieces[0].endswith("stored, and retrieved when needed.")
    assert len(pieces[0]) == 416
    assert pieces[1].endswith("des états de conscience passés")  # the cut keeps the mark, strip drops none
    assert pieces[-1].endswith("기억은 정보를 저장하는 능력이다.")
    digest = hashlib.sha256("\x00".join(pieces).encode()).hexdigest()
    assert digest == "f5db5a0bd9378831ad2245a12af07b277c653fad58a6de9757fb07746a94101c"
    encoding = cl100k_base()
    assert all(len(encoding.encode(p)) <= 201 for p in pieces)  # 200 tokens, +1 where "\n" became " "
    assert all("\n" not in p for p in pieces)


def test_chunks_do_not_overlap_and_cut_after_350_chars():
    sentences = [f"Sentence number {i} talks about topic {i % 7} in some detail." for i in range(200)]
    text = " ".join(sentences)
    pieces = split_text(text)
    assert " ".join(pieces) == text  # every character once, in order: no overlap, nothing lost
    for piece in pieces[:-1]:
        assert piece.endswith(".") and len(piece) > 350


def test_no_mark_after_350_chars_means_no_cut():
    text = "word " * 400  # 400 tokens, no punctuation at all
    pieces = split_text(text)
    assert [len(cl100k_base().encode(p)) for p in pieces] == [200, 200]


def test_short_and_empty_chunks_are_dropped():
    assert split_text("") == []
    assert split_text(" \n\t ") == []
    assert split_text("hello") == []  # 5 characters: dropped
    assert split_text("hello!") == ["hello!"]  # 6: kept


def test_cap_leaves_the_rest_in_one_last_chunk(monkeypatch):
    monkeypatch.setattr(chunking, "MAX_CHUNKS", 2)  # the real cap (10,000 rounds) needs 2M tokens
    text = "alpha " * 1000
    pieces = split_text(text)
    assert len(pieces) == 3
    assert len(cl100k_base().encode(pieces[2])) > 500


@pytest.mark.parametrize("count", [0, 1, 3])
def test_chunk_ids(count):
    assert chunk_ids("doc", count) == [f"doc_{i}" for i in range(count)]
