"""The fake network is itself checked against the reference vectors and the atproto formats."""

from __future__ import annotations

import json
from pathlib import Path

import libipld
from support.fakes.spaces_network import Repo
from support.sync import memory_record, rkey

from engram.atrepo.car import verify_repo_car
from engram.atrepo.commit import CommitContext, verify_commit
from engram.atrepo.lthash import LtHash, record_element

VECTORS = json.loads((Path(__file__).parents[1] / "vectors" / "atproto-space-vectors.json").read_text())


def test_fake_repo_set_hash_is_the_reference_hash():
    for case in VECTORS["commits"]:
        repo = Repo(records={f"{r['collection']}/{r['rkey']}": (r["cid"], b"") for r in case["records"]})
        assert repo.set_hash().digest().hex() == case["hash"]


async def test_fake_commits_and_exports_verify_like_the_reference(network):
    alice = network.add_member()
    for i in range(3):
        network.put(alice, "garden.engram.memory", rkey(), memory_record(f"m{i}", i))
    commit = alice.repo.commit
    folded = LtHash()
    for op in alice.repo.ops:  # the oplog folds to the committed hash
        if op.prev:
            folded.remove(record_element(op.collection, op.rkey, op.prev))
        if op.cid:
            folded.add(record_element(op.collection, op.rkey, op.cid))
    verify_commit(
        commit, CommitContext(network.space, alice.did, commit.rev), alice.key.public_key, folded.digest()
    )

    from engram.atrepo.car import RepoRecord, write_repo_car

    records = [RepoRecord(*path.split("/"), cid, block) for path, (cid, block) in alice.repo.records.items()]
    car = write_repo_car(commit, records)
    header, blocks = libipld.decode_car(car)
    assert len(blocks) == 5 and len(header["roots"]) == 2
    assert len(verify_repo_car(car, network.space, alice.did, alice.key.public_key).records) == 3
    note = network.put(alice, "garden.engram.memory", rkey(), memory_record("m3", 3))
    assert note["prevSpaceRev"] < note["spaceRev"] and note["repoRev"] == alice.repo.rev
