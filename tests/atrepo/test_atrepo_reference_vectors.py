"""The repo primitives against the reference implementation's vectors (tests/vectors)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engram.atrepo.commit import CommitContext, SignedCommit, commit_mac, encode_context, verify_commit
from engram.atrepo.errors import CommitVerificationError
from engram.atrepo.lthash import LtHash, record_element
from engram.atrepo.ops import RepoOp, apply_op
from engram.auth.crypto_keys import PublicKey

VECTORS = json.loads((Path(__file__).parents[1] / "vectors" / "atproto-space-vectors.json").read_text())


@pytest.mark.parametrize("case", VECTORS["lthash"], ids=lambda c: repr(c["ops"])[:40])
def test_lthash_digest_matches_reference(case):
    state = LtHash()
    for sign, element in case["ops"]:
        (state.add if sign == "+" else state.remove)(element)
    assert state.digest().hex() == case["digest"]
    assert state.is_empty() == case["empty"]
    assert LtHash(state.state).digest().hex() == case["digest"]  # state survives a round trip


@pytest.mark.parametrize("case", VECTORS["commits"], ids=lambda c: c["ctx"]["rev"])
def test_commit_context_hash_mac_and_signature_match_reference(case):
    ctx = CommitContext(case["ctx"]["space"], case["ctx"]["author"], case["ctx"]["rev"])
    ikm = bytes.fromhex(case["ikm"])
    context = encode_context(ctx, ikm)
    assert context.hex() == case["ctxBytes"]

    state = LtHash()
    for record in case["records"]:
        element = record_element(record["collection"], record["rkey"], record["cid"])
        assert element == record["element"]
        state.add(element)
    assert state.digest().hex() == case["hash"]
    assert commit_mac(ikm, context, state.digest()).hex() == case["mac"]

    commit = SignedCommit(
        ctx.rev, bytes.fromhex(case["hash"]), ikm, bytes.fromhex(case["sig"]), bytes.fromhex(case["mac"])
    )
    assert PublicKey.from_did_key(case["didKey"]).verify(context, commit.sig, strict_low_s=True)
    verify_commit(commit, ctx, case["didKey"], state.digest())
    # Every form survives its round trip unchanged.
    assert SignedCommit.from_cbor(commit.to_cbor()) == commit
    assert SignedCommit.from_json(json.loads(json.dumps(commit.to_json()))) == commit


@pytest.mark.parametrize("case", VECTORS["commits"], ids=lambda c: c["ctx"]["rev"])
def test_reference_commit_rejects_any_changed_part(case):
    ctx = CommitContext(case["ctx"]["space"], case["ctx"]["author"], case["ctx"]["rev"])
    commit = SignedCommit(
        ctx.rev,
        bytes.fromhex(case["hash"]),
        bytes.fromhex(case["ikm"]),
        bytes.fromhex(case["sig"]),
        bytes.fromhex(case["mac"]),
    )
    flipped = bytes([commit.sig[0] ^ 1]) + commit.sig[1:]
    wrong = [
        (commit, CommitContext(ctx.space + "x", ctx.author, ctx.rev), None, "mac"),
        (commit, CommitContext(ctx.space, ctx.author + "x", ctx.rev), None, "mac"),
        (SignedCommit(ctx.rev, commit.hash, commit.ikm, flipped, commit.mac), ctx, None, "signature"),
        (SignedCommit(ctx.rev, bytes(32), commit.ikm, commit.sig, commit.mac), ctx, None, "mac"),
        (commit, ctx, LtHash().add("n.c.z/9/x").digest(), "add up"),
    ]
    for bad_commit, bad_ctx, set_hash, reason in wrong:
        with pytest.raises(CommitVerificationError, match=reason):
            verify_commit(bad_commit, bad_ctx, case["didKey"], set_hash)


def test_ops_fold_to_the_reference_commit_hash():
    case = VECTORS["commits"][1]
    state = LtHash()
    first, second = case["records"]
    # create both, then update the first away and back, then delete-and-recreate the second
    ops = [
        RepoOp("r1", first["collection"], first["rkey"], first["cid"], None),
        RepoOp("r1", second["collection"], second["rkey"], second["cid"], None),
        RepoOp("r2", first["collection"], first["rkey"], second["cid"], first["cid"]),
        RepoOp("r3", first["collection"], first["rkey"], first["cid"], second["cid"]),
        RepoOp("r4", second["collection"], second["rkey"], None, second["cid"]),
        RepoOp("r5", second["collection"], second["rkey"], second["cid"], None),
    ]
    for op in ops:
        apply_op(state, op)
    assert state.digest().hex() == case["hash"]
