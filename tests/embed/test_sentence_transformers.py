"""The optional sentence-transformers backend: refusal paths and the file-only digest.

torch is not installed in engram's venv (it is an optional extra), so the model itself is not loaded here;
the manifest/digest logic reads files only and is tested on a synthetic folder.
"""

import json
import os
import sys

import pytest

from engram.embed import EmbedderLoadError, load_embedder
from engram.embed.base import manifest_digest, sha256_file
from engram.embed.builtin import DATA_DIR, TOKENIZER_SHA256
from engram.embed.sentence_transformers import SentenceTransformersEmbedder, st_folder_manifest


def _st_folder(d, *, pooling=("mean_tokens",), normalize=True, prompts=None):
    (d / "model.safetensors").write_bytes(b"not really weights")
    (d / "tokenizer.json").write_bytes((DATA_DIR / "tokenizer.json").read_bytes())
    modules = [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
    ]
    if normalize:
        modules.append(
            {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}
        )
    (d / "modules.json").write_text(json.dumps(modules))
    (d / "1_Pooling").mkdir()
    cfg = {
        "word_embedding_dimension": 384,
        "pooling_mode_cls_token": False,
        "pooling_mode_mean_tokens": False,
    }
    cfg.update({f"pooling_mode_{p}": True for p in pooling})
    (d / "1_Pooling" / "config.json").write_text(json.dumps(cfg))
    (d / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 256}))
    if prompts is not None:
        (d / "config_sentence_transformers.json").write_text(json.dumps({"prompts": prompts}))
    return d


def test_manifest_is_read_from_the_folder_files(tmp_path):
    d = _st_folder(tmp_path)
    m = st_folder_manifest(d)
    assert m == {
        "format": "embedder-manifest/1",
        "weights_sha256": sha256_file(d / "model.safetensors"),
        "tokenizer_sha256": TOKENIZER_SHA256,
        "pooling": "mean",
        "normalize": True,
        "max_tokens": 256,
        "query_prefix": "",
        "document_prefix": "",
        "dim": 384,
    }
    # Extra packaging files (README, vocab.txt, ...) do not change the digest.
    before = manifest_digest(m)
    (d / "README.md").write_text("model card")
    assert manifest_digest(st_folder_manifest(d)) == before


def test_manifest_picks_up_prompts_pooling_and_normalize(tmp_path):
    d = _st_folder(
        tmp_path,
        pooling=("cls_token",),
        normalize=False,
        prompts={"query": "query: ", "passage": "passage: "},
    )
    m = st_folder_manifest(d)
    got = (m["pooling"], m["normalize"], m["query_prefix"], m["document_prefix"])
    assert got == ("cls", False, "query: ", "passage: ")


def test_folder_without_weights_is_refused(tmp_path):
    d = _st_folder(tmp_path)
    (d / "model.safetensors").unlink()
    with pytest.raises(EmbedderLoadError, match="model.safetensors"):
        st_folder_manifest(d)


@pytest.mark.parametrize("target", ["sentence-transformers/all-MiniLM-L6-v2", "all-MiniLM-L6-v2", "missing"])
def test_anything_but_an_existing_directory_is_refused_before_any_import(tmp_path, monkeypatch, target):
    monkeypatch.chdir(tmp_path)  # relative names resolve inside an empty folder
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)  # an import attempt would be an error
    with pytest.raises(EmbedderLoadError, match="existing local directory") as e:
        load_embedder(f"sentence-transformers:{target}")
    assert "never downloads" in str(e.value)


def test_file_instead_of_directory_is_refused(tmp_path):
    f = tmp_path / "model.safetensors"
    f.write_bytes(b"x")
    with pytest.raises(EmbedderLoadError, match="existing local directory"):
        SentenceTransformersEmbedder(f)


def test_missing_package_names_the_extra_and_sets_offline_first(tmp_path, monkeypatch):
    d = _st_folder(tmp_path)
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")  # restored after the test
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "0")
    # None in sys.modules makes `import sentence_transformers` raise ImportError, exactly as when the
    # extra is not installed (and it is not installed here either way).
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    with pytest.raises(EmbedderLoadError, match=r"pip install 'engram\[st\]'"):
        load_embedder(f"sentence-transformers:{d}")
    assert os.environ["HF_HUB_OFFLINE"] == "1"
