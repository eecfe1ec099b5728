import numpy as np
import pytest

from engram.embed import Embedder
from engram.embed.hashing import HashingEmbedder


def test_deterministic_across_instances_and_calls():
    a, b = HashingEmbedder(64), HashingEmbedder(64)
    texts = ["The quick brown fox", "jumps over", ""]
    va = a.embed(texts, "document")
    np.testing.assert_array_equal(va, b.embed(texts, "document"))
    np.testing.assert_array_equal(va, a.embed(texts, "query"))  # no prefixes by default
    assert a.digest == b.digest and a.digest.startswith("sha256:") and len(a.digest) == 71
    # Bag of words: order does not matter.
    np.testing.assert_array_equal(va[0], a.embed(["fox brown quick the"], "query")[0])


def test_pinned_values_same_on_every_machine():
    # If these change, every stored hashing vector and digest changes with them: that must be deliberate.
    e = HashingEmbedder(64)
    v = e.embed(["The quick brown fox"], "query")[0]
    signs = [(int(i), float(np.sign(v[i]))) for i in np.flatnonzero(v)]
    assert signs == [(4, -1.0), (10, 1.0), (18, -1.0), (30, -1.0)]
    np.testing.assert_allclose(np.abs(v[[4, 10, 18, 30]]), 0.5)
    assert e.digest == "sha256:a8285f821c8268dc25678bb2f1b6d1761da152924013228bd6c4dd28cdbfa9e0"


def test_contract_shape_norm_name_digest():
    e = HashingEmbedder()
    assert isinstance(e, Embedder)
    assert e.name == "hashing-256" and e.dims == 256
    v = e.embed(["", "!!!", "words and more words"], "document")
    assert v.shape == (3, 256) and v.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-6)
    assert HashingEmbedder(128).digest != e.digest
    assert HashingEmbedder(256, query_prefix="q: ").digest != e.digest
    assert e.info()["backend"] == "hashing" and e.manifest()["dim"] == 256


def test_shared_words_score_higher_than_disjoint_ones():
    e = HashingEmbedder(512)
    q, near, far = e.embed(["red apple pie", "apple pie recipe", "quarterly tax filing"], "document")
    assert q @ near > 0.4 > abs(q @ far)
    assert e.embed(["Apple"], "query")[0] @ e.embed(["apple"], "query")[0] == pytest.approx(1.0)


def test_prefixes_apply_per_kind():
    e = HashingEmbedder(64, query_prefix="search", document_prefix="")
    assert not np.array_equal(e.embed(["x"], "query"), e.embed(["x"], "document"))


@pytest.mark.parametrize("dims", [0, 7, 4097, True, 3.5, "64"])
def test_bad_dims(dims):
    with pytest.raises(ValueError):
        HashingEmbedder(dims)
