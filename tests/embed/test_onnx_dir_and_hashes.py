"""Loading from files: hash pinning, onnx:<dir> folders, and the registry's spec strings."""

import json
import shutil

import numpy as np
import pytest

from engram.embed import EmbedderLoadError, load_embedder
from engram.embed.builtin import (
    DATA_DIR,
    DIGEST,
    TOKENIZER_SHA256,
    WEIGHTS_SHA256,
    default_model_path,
    load_builtin,
)
from engram.embed.hashing import HashingEmbedder
from engram.embed.onnx import OnnxEmbedder


@pytest.fixture(scope="module")
def model_copy(tmp_path_factory):
    """One copy of the 23 MB model per module; tests that corrupt files make their own copies of this."""
    d = tmp_path_factory.mktemp("minilm")
    shutil.copy(default_model_path(), d / "model.onnx")
    shutil.copy(DATA_DIR / "tokenizer.json", d / "tokenizer.json")
    return d


def _flip_one_byte(path, offset):
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x01
    path.write_bytes(bytes(data))


def test_corrupted_model_refuses_to_load_naming_file_and_hashes(model_copy, tmp_path):
    bad = tmp_path / "model.onnx"
    shutil.copy(model_copy / "model.onnx", bad)
    _flip_one_byte(bad, bad.stat().st_size // 2)
    with pytest.raises(EmbedderLoadError) as e:
        load_builtin(model_path=bad)
    msg = str(e.value)
    assert str(bad) in msg and WEIGHTS_SHA256 in msg and "actual" in msg
    assert msg.split("actual ")[1].split(";")[0] != WEIGHTS_SHA256


def test_changed_tokenizer_refuses_to_load(model_copy, tmp_path):
    bad = tmp_path / "tokenizer.json"
    doc = json.loads((model_copy / "tokenizer.json").read_text("utf-8"))
    doc["truncation"]["max_length"] = 512  # still a valid tokenizer, just not the pinned one
    bad.write_text(json.dumps(doc), "utf-8")
    with pytest.raises(EmbedderLoadError, match=TOKENIZER_SHA256):
        load_builtin(tokenizer_path=bad)


def test_missing_file_is_a_load_error(tmp_path):
    with pytest.raises(EmbedderLoadError, match="not found"):
        load_builtin(model_path=tmp_path / "nope.onnx")


def _write_manifest(d, **fields):
    (d / "embedder.json").write_text(json.dumps(fields), "utf-8")


def test_onnx_dir_with_the_builtin_files_gets_the_builtin_digest_and_vectors(model_copy, builtin):
    _write_manifest(model_copy, name="minilm-copy", dims=384, pooling="mean", normalize=True, max_tokens=256)
    e = load_embedder(f"onnx:{model_copy}")
    assert isinstance(e, OnnxEmbedder) and e.name == "minilm-copy"
    # The digest covers what determines vectors, not the name or where the files live.
    assert e.digest == DIGEST
    texts = ["where did I park", "notes from the design review"]
    np.testing.assert_allclose(e.embed(texts, "query"), builtin.embed(texts, "query"), atol=1e-6)


def test_onnx_dir_prefixes_and_cls_pooling_change_digest_and_vectors(model_copy, builtin):
    _write_manifest(
        model_copy,
        name="m",
        dim=384,
        pooling="cls",
        query_prefix="query: ",
        document_prefix="passage: ",
        weights_sha256=WEIGHTS_SHA256,
    )
    e = load_embedder(f"onnx:{model_copy}")
    assert e.digest != DIGEST and e.manifest()["pooling"] == "cls"
    q = e.embed(["hello"], "query")[0]
    d = e.embed(["hello"], "document")[0]
    assert not np.allclose(q, d)  # different prefixes per kind
    assert float(q @ builtin.embed(["hello"], "query")[0]) < 0.99  # cls pooling differs from mean


@pytest.mark.parametrize(
    "manifest,match",
    [
        ({"name": "x"}, "missing required key 'dims'"),
        ({"name": "x", "dims": 384, "poling": "cls"}, "unknown keys"),
        ({"name": "x", "dims": True}, "'dims' must be int"),
        ({"name": "x", "dims": 384, "pooling": "max"}, "pooling must be"),
        ({"name": "x", "dims": 768}, "does not produce 768-dim"),
        ({"name": "x", "dims": 384, "weights_sha256": "00" * 32}, "wrong sha256"),
        ({"name": "x", "dims": 384, "output": "pooler_output"}, "no output 'pooler_output'"),
    ],
)
def test_bad_onnx_dir_manifests_are_clear_load_errors(model_copy, manifest, match):
    _write_manifest(model_copy, **manifest)
    with pytest.raises(EmbedderLoadError, match=match):
        load_embedder(f"onnx:{model_copy}")


def test_onnx_dir_without_manifest_or_not_a_dir(tmp_path):
    with pytest.raises(EmbedderLoadError, match="embedder.json"):
        load_embedder(f"onnx:{tmp_path}")
    with pytest.raises(EmbedderLoadError, match="existing local directory"):
        load_embedder(f"onnx:{tmp_path / 'missing'}")
    (tmp_path / "embedder.json").write_text("{not json", "utf-8")
    with pytest.raises(EmbedderLoadError, match="not valid JSON"):
        load_embedder(f"onnx:{tmp_path}")


def test_registry_specs():
    assert load_embedder("none") is None
    assert load_embedder("builtin").digest == DIGEST
    h = load_embedder("hashing")
    assert isinstance(h, HashingEmbedder) and h.dims == 256
    assert load_embedder("hashing:64").name == "hashing-64"


@pytest.mark.parametrize(
    "spec",
    [
        "",
        "bogus",
        "builtin:extra",
        "none:x",
        "onnx:",
        "onnx",
        "sentence-transformers:",
        "hashing:abc",
        "hashing:-4",
        "hashing:3",
        "hashing:1000000",
        "plugin:foo",
    ],
)
def test_registry_rejects_bad_specs(spec):
    with pytest.raises(EmbedderLoadError):
        load_embedder(spec)


def test_plan_batches_groups_similar_lengths_and_respects_limits():
    from engram.embed.onnx import plan_batches

    lengths = [256, 12, 250, 9, 10, 200, 11]
    batches = plan_batches(lengths, batch_size=32)
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))
    assert batches[0] == [0, 2, 5]  # 250 and 200 are within 3/4 of 256; the short texts are not
    assert sorted(batches[1]) == [1, 3, 4, 6]  # short texts batch together (padding to <= 32 is cheap)
    assert [len(b) for b in plan_batches([5] * 70, batch_size=32)] == [32, 32, 6]
    assert [len(b) for b in plan_batches([256] * 20, batch_size=32)] == [16, 4]  # 4096-token cap
    assert plan_batches([], batch_size=32) == []
