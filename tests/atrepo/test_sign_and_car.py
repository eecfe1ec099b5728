"""Signing commits and writing/verifying getRepo CAR exports, round trips and tampering."""

from __future__ import annotations

import libipld
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engram.atrepo.blocks import cid_of_block, encode_block, from_json, to_json
from engram.atrepo.car import RepoRecord, canonical_path_order, verify_repo_car, write_repo_car
from engram.atrepo.commit import CommitContext, SignedCommit, sign_commit, verify_commit
from engram.atrepo.errors import CommitVerificationError, RepoFormatError
from engram.atrepo.lthash import LtHash, record_element
from engram.auth.crypto_keys import PrivateKey

SPACE = "at://did:plc:authority/space/garden.engram.space/team"
AUTHOR = "did:plc:alice"


def records(n: int) -> list[RepoRecord]:
    out = []
    for i in range(n):
        block = encode_block(
            {"$type": "garden.engram.memory", "text": f"memory {i}", "createdAt": "2026-01-01T00:00:00Z"}
        )
        out.append(RepoRecord("garden.engram.memory", f"3k{i:011d}", cid_of_block(block), block))
    return out


def signed_export(key: PrivateKey, recs: list[RepoRecord], rev: str = "3kbcq3p7ad400", **kw) -> bytes:
    state = LtHash()
    for r in recs:
        state.add(record_element(r.collection, r.rkey, r.cid))
    commit = sign_commit(state.digest(), CommitContext(SPACE, AUTHOR, rev), key)
    return write_repo_car(commit, recs, **kw)


@pytest.mark.parametrize("alg", ["ES256K", "ES256"])
def test_signed_commit_verifies_with_the_signers_key_only(alg):
    key = PrivateKey.generate(alg)
    ctx = CommitContext(SPACE, AUTHOR, "3kbcq3p7ad400")
    digest = LtHash().add("a/b/c").digest()
    commit = sign_commit(digest, ctx, key)
    verify_commit(commit, ctx, key.public_key, digest)
    verify_commit(SignedCommit.from_cbor(commit.to_cbor()), ctx, key.public_key.did_key, digest)
    with pytest.raises(CommitVerificationError, match="signature"):
        verify_commit(commit, ctx, PrivateKey.generate(alg).public_key, digest)
    with pytest.raises(CommitVerificationError, match="rev"):
        verify_commit(commit, CommitContext(SPACE, AUTHOR, "3kbcq3p7ad401"), key.public_key)


@pytest.mark.parametrize("exclude_values", [False, True])
def test_car_round_trip(exclude_values):
    key = PrivateKey.generate("ES256K")
    recs = records(12)
    car = signed_export(key, recs, exclude_values=exclude_values)
    header, blocks = libipld.decode_car(car)  # an independent reader accepts it
    assert len(header["roots"]) == 2 and len(blocks) == (2 if exclude_values else 14)
    repo = verify_repo_car(car, SPACE, AUTHOR, key.public_key, expect_values=not exclude_values)
    assert list(repo.index) == canonical_path_order(r.path for r in recs)
    assert {r.cid for r in repo.records} == (set() if exclude_values else {r.cid for r in recs})
    assert all(r.value()["text"].startswith("memory") for r in repo.records)


def test_empty_repo_exports_and_verifies():
    key = PrivateKey.generate("ES256")
    repo = verify_repo_car(signed_export(key, []), SPACE, AUTHOR, key.public_key)
    assert repo.index == {} and repo.records == []


def test_car_tampering_is_refused():
    key = PrivateKey.generate("ES256K")
    recs = records(3)
    good = signed_export(key, recs)
    with pytest.raises(CommitVerificationError, match="signature"):
        verify_repo_car(good, SPACE, AUTHOR, PrivateKey.generate("ES256K").public_key)
    with pytest.raises(CommitVerificationError):
        verify_repo_car(good, SPACE, "did:plc:mallory", key.public_key)
    # a record swapped for another with a correct CID of its own: the index no longer matches the block
    other = records(4)[3]
    swapped = recs[:2] + [RepoRecord(recs[2].collection, recs[2].rkey, other.cid, other.block)]
    state = LtHash()
    for r in recs:
        state.add(record_element(r.collection, r.rkey, r.cid))
    commit = sign_commit(state.digest(), CommitContext(SPACE, AUTHOR, "3kbcq3p7ad400"), key)
    with pytest.raises(CommitVerificationError, match="add up"):
        verify_repo_car(write_repo_car(commit, swapped), SPACE, AUTHOR, key.public_key)
    # a block whose bytes changed under the same CID
    changed = good[:-3] + bytes([good[-3] ^ 1]) + good[-2:]
    with pytest.raises((CommitVerificationError, RepoFormatError)):
        verify_repo_car(changed, SPACE, AUTHOR, key.public_key)
    with pytest.raises(RepoFormatError):
        verify_repo_car(b"garbage", SPACE, AUTHOR, key.public_key)
    with pytest.raises(RepoFormatError):
        verify_repo_car(good, SPACE, AUTHOR, key.public_key, expect_values=False)


@settings(max_examples=25, deadline=None)
@given(
    st.recursive(
        st.none()
        | st.booleans()
        | st.integers(-(2**53), 2**53)
        | st.text(max_size=8)
        | st.binary(max_size=8),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
        max_leaves=10,
    )
)
def test_json_form_round_trips(value):
    assert from_json(to_json(value)) == value


def cid_shaped(n: int = 32) -> bytes:
    """Opaque bytes whose start parses as a CID (libipld would take them for a link)."""
    return bytes([0x01, 0x71, 0x12, 0x04]) + bytes(range(5, n + 1))[: n - 4]


def test_opaque_bytes_that_parse_as_a_cid_stay_byte_strings():
    raw = cid_shaped()
    assert libipld.encode_dag_cbor(raw)[:2] == bytes([0xD8, 0x2A])  # what libipld alone would write
    encoded = encode_block({"v": raw, "w": [raw, b"\x01"]})
    assert (
        encoded
        == bytes([0xA2, 0x61, 0x76, 0x58, 32]) + raw + bytes([0x61, 0x77, 0x82, 0x58, 32]) + raw + b"\x41\x01"
    )
    assert libipld.decode_dag_cbor(encoded) == {"v": raw, "w": [raw, b"\x01"]}
    link = from_json({"$link": "bafyreidefdycgbfy3oglcb6ism3eqhyp5llsrpzxjsuac2gsy4mtrtx244"})
    assert encode_block({"l": link})[3:5] == bytes([0xD8, 0x2A])  # a real link is still tag 42


def test_commit_with_a_cid_shaped_hash_encodes_canonically():
    key = PrivateKey.generate("ES256K")
    ctx = CommitContext(SPACE, AUTHOR, "3kbcq3p7ad400")
    commit = sign_commit(cid_shaped(), ctx, key)
    data = commit.to_cbor()
    assert bytes([0x58, 32]) + cid_shaped() in data and bytes([0xD8, 0x2A]) not in data
    assert SignedCommit.from_cbor(data) == commit
