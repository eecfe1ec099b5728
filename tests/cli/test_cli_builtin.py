"""The built-in MiniLM embedder through the CLI (no server): model info, and imports embedded with it."""

from __future__ import annotations

import orjson


def test_builtin_model_info_and_import(engram, monkeypatch, tmp_path):
    monkeypatch.setenv("ENGRAM_EMBEDDER", "builtin")
    monkeypatch.setenv("ENGRAM_DATA_DIR", str(tmp_path / "data"))
    info = engram("model", "info", "--json").json()
    assert (info["name"], info["dims"]) == ("all-MiniLM-L6-v2", 384) and info["digest"].startswith("sha256:")

    engram("space", "create", "mini")
    path = tmp_path / "m.jsonl"
    path.write_bytes(
        b"".join(orjson.dumps({"text": t}) + b"\n" for t in ("pnpm over npm", "tea at 80C", "run"))
    )
    assert engram("import", "mini", path, "--json").json()["created"] == 3
    status = engram("space", "status", "mini", "--json").json()
    assert (
        status["config"]["model"] == "all-MiniLM-L6-v2" and status["config"]["modelDigest"] == info["digest"]
    )
    assert status["indexed"] == 3
