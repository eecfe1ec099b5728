"""Rendezvous hashing: every node computes the same owner, and membership changes move few spaces."""

import hashlib

from hypothesis import given
from hypothesis import strategies as st

from engram.cluster import rendezvous

NODES = st.lists(st.text(min_size=1, max_size=12), min_size=1, max_size=6, unique=True)
SPACE = st.text(min_size=1, max_size=40)


def test_the_score_is_the_first_eight_bytes_of_sha256_of_space_nul_node():
    digest = hashlib.sha256(b"at://did:plc:a/garden.engram.space/x\x00node-1").digest()
    assert rendezvous.score("at://did:plc:a/garden.engram.space/x", "node-1") == int.from_bytes(
        digest[:8], "big"
    )


def test_the_highest_score_owns_and_no_nodes_means_no_owner():
    space = "at://did:plc:a/garden.engram.space/x"
    nodes = ["a", "b", "c", "d"]
    assert rendezvous.owner(space, nodes) == max(nodes, key=lambda n: rendezvous.score(space, n))
    assert rendezvous.owner(space, []) is None


@given(SPACE, NODES)
def test_the_owner_does_not_depend_on_the_order_nodes_are_listed_in(space, nodes):
    assert rendezvous.owner(space, nodes) == rendezvous.owner(space, list(reversed(nodes)))
    assert rendezvous.owner(space, nodes) in nodes


@given(SPACE, NODES, st.text(min_size=1, max_size=12))
def test_a_joining_node_takes_spaces_only_for_itself(space, nodes, newcomer):
    before = rendezvous.owner(space, nodes)
    after = rendezvous.owner(space, [*nodes, newcomer])
    assert after in (before, newcomer)


def test_spaces_spread_evenly_and_a_fourth_node_moves_about_a_quarter():
    spaces = [f"at://did:plc:user{i}/garden.engram.space/s{i}" for i in range(3000)]
    three = {s: rendezvous.owner(s, ["n1", "n2", "n3"]) for s in spaces}
    for node in ("n1", "n2", "n3"):
        assert 0.28 < sum(1 for o in three.values() if o == node) / len(spaces) < 0.39
    four = {s: rendezvous.owner(s, ["n1", "n2", "n3", "n4"]) for s in spaces}
    moved = [s for s in spaces if four[s] != three[s]]
    assert all(four[s] == "n4" for s in moved)
    assert 0.2 < len(moved) / len(spaces) < 0.3
