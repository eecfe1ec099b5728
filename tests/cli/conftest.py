"""The CLI through its real entry point (`engram.cli.main.main`) over a real data dir, and one real
`engram serve` subprocess on a free loopback port sharing that data dir (the search client and the remote
admin client talk to it over HTTP)."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

import orjson
import pytest
from support.engram_process import start_engram, stop

from engram.auth.crypto_keys import PrivateKey
from engram.auth.identity import save_operator_key
from engram.cli.main import main

OPS_DID = "did:plc:cliopsadmin0000000000000"


@dataclass
class Result:
    code: int
    out: str
    err: str

    def json(self):
        return orjson.loads(self.out)


@dataclass
class Server:
    url: str
    port: int
    data_dir: Path
    config_dir: Path
    ops_key_file: Path
    log: Path

    def env(self) -> dict[str, str]:
        return {
            "ENGRAM_DATA_DIR": str(self.data_dir),
            "ENGRAM_EMBEDDER": "hashing",
            "ENGRAM_PORT": str(self.port),
            "ENGRAM_PUBLIC_URL": self.url,
            "ENGRAM_DEV": "1",
            "ENGRAM_ADMIN_DIDS": OPS_DID,
            "ENGRAM_LOG_LEVEL": "warning",
            "ENGRAM_LOAD_WAIT_MS": "10000",  # searches wait for a loading index on a busy machine
            "XDG_CONFIG_HOME": str(self.config_dir),
        }


@pytest.fixture(scope="session")
def server(tmp_path_factory) -> Server:
    root = tmp_path_factory.mktemp("cli-server")
    ops_key = PrivateKey.generate("ES256")

    def at(port: int) -> Server:
        url = f"http://127.0.0.1:{port}"
        return Server(url, port, root / "data", root / "config", root / "ops.key", root / "serve.log")

    template = at(0)
    # The operator's key in the data dir: the server resolves the admin DID from its keyring, offline.
    save_operator_key(template.data_dir, OPS_DID, ops_key)
    template.ops_key_file.write_text(ops_key.to_multibase() + "\n")
    base_env = {k: v for k, v in os.environ.items() if not k.startswith("ENGRAM_")}
    proc, port = start_engram(
        [sys.executable, "-m", "engram", "serve"], lambda port: base_env | at(port).env(), template.log
    )
    try:
        yield at(port)
    finally:
        stop(proc)


@pytest.fixture
def engram(server, monkeypatch, capsys):
    """Run `engram <args>` in-process against the server's data dir and settings; returns a Result."""
    for name in [k for k in os.environ if k.startswith("ENGRAM_")]:
        monkeypatch.delenv(name)
    for name, value in server.env().items():
        monkeypatch.setenv(name, value)

    def run(*args: str) -> Result:
        capsys.readouterr()
        code = main([str(a) for a in args])
        captured = capsys.readouterr()
        return Result(code, captured.out, captured.err)

    return run


@pytest.fixture
def space_name(request) -> str:
    """A space name of its own for each test (they share the server's data dir)."""
    return "t-" + request.node.name.replace("[", "-").replace("]", "").replace("_", "-")[:60]
