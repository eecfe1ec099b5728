"""A normal (non-editable) install works: build the wheel, install it into a fresh venv, run
`engram serve --port N` from a directory that is not the checkout, and ask it describeService over HTTP.

Offline and quick on purpose: the wheel is built with this venv's setuptools (--no-build-isolation, no
index), and the fresh venv gets only engram's wheel; its dependencies come from this venv's site-packages
through a .pth line (a plain path line: the editable engram's own .pth finder there is not run, so the
only engram the fresh venv can import is the one from the wheel, which the test checks).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import urllib.request
import venv
import zipfile
from pathlib import Path

from support.engram_process import start_engram, stop

REPO = Path(__file__).resolve().parents[2]
SOURCES = ("engram", "lexicons", "pyproject.toml", "README.md")


def _build_wheel(tmp: Path) -> Path:
    # Build from a copy: an in-tree build writes build/ and *.egg-info into the checkout.
    src = tmp / "src"
    src.mkdir()
    for name in SOURCES:
        origin = REPO / name
        if origin.is_dir():
            shutil.copytree(origin, src / name, symlinks=True, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(origin, src / name)
    dist = tmp / "dist"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation", "--no-index"]
        + ["--wheel-dir", str(dist), str(src)],
        check=True,
        capture_output=True,
    )
    (wheel,) = dist.glob("engram-*.whl")
    return wheel


def _fresh_venv(tmp: Path, wheel: Path) -> Path:
    env_dir = tmp / "venv"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    python = env_dir / "bin" / "python"
    site = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    Path(site, "dependencies-from-the-test-venv.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-deps"]
        + ["--no-index", str(wheel)],
        check=True,
        capture_output=True,
    )
    return env_dir


def test_the_wheel_carries_the_lexicons_and_serves_from_anywhere(tmp_path):
    wheel = _build_wheel(tmp_path)
    with zipfile.ZipFile(wheel) as zf:
        shipped = {n for n in zf.namelist() if n.startswith("engram/lexicons/") and n.endswith(".json")}
        sources = sorted((REPO / "lexicons").rglob("*.json"))
        assert shipped == {f"engram/lexicons/{p.relative_to(REPO / 'lexicons')}" for p in sources}
        for path in sources:  # real copies of the top-level sources, not links
            assert zf.read(f"engram/lexicons/{path.relative_to(REPO / 'lexicons')}") == path.read_bytes()
        graph = REPO / "engram" / "search" / "data" / "int8_scan.onnx"  # the batched scan's (package data)
        assert zf.read("engram/search/data/int8_scan.onnx") == graph.read_bytes()

    env_dir = _fresh_venv(tmp_path, wheel)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    imported_from = subprocess.run(
        [env_dir / "bin" / "python", "-c", "import engram; print(engram.__file__)"],
        cwd=elsewhere,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    assert Path(imported_from).is_relative_to(env_dir), imported_from

    base = {k: v for k, v in os.environ.items() if not k.startswith("ENGRAM_")}

    def env(port: int) -> dict[str, str]:
        return base | {"ENGRAM_DATA_DIR": str(tmp_path / "data"), "ENGRAM_LOG_LEVEL": "warning"}

    # The port comes as `--port`: the service's URL and DID must follow it (not stay at 8080's).
    describe = "/xrpc/garden.engram.describeService"
    proc, port = start_engram(
        lambda port: [str(env_dir / "bin" / "engram"), "serve", "--port", str(port)],
        env,
        tmp_path / "serve.log",
        cwd=elsewhere,
        ready_path=describe,
    )
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{describe}", timeout=30) as r:
            body = json.loads(r.read())
        assert body["did"] == f"did:web:localhost%3A{port}"
    finally:
        stop(proc)


def _stages(dockerfile: str) -> list[list[str]]:
    """The Dockerfile's instructions (continuation lines joined), split into build stages."""
    stages: list[list[str]] = []
    for line in dockerfile.replace("\\\n", " ").splitlines():
        line = line.strip()
        if line.startswith("FROM "):
            stages.append([])
        if line and not line.startswith("#") and stages:
            stages[-1].append(line)
    return stages


def test_the_docker_image_installs_the_built_wheel():
    """No Docker daemon in CI, so the Dockerfile is read: the build stage installs a wheel built from the
    checkout (the steps test_the_wheel_carries_the_lexicons_and_serves_from_anywhere runs), and the
    runtime stage copies only the virtualenv, runs as a non-root user on /data, with a health check."""
    build, runtime = _stages((REPO / "Dockerfile").read_text())
    steps = " ".join(build)
    assert "pip wheel --no-deps --wheel-dir /dist ." in steps
    assert "pip install --no-deps /dist/engram-*.whl" in steps
    assert " -e " not in steps and "--editable" not in steps
    assert [i for i in runtime if i.startswith("COPY")] == ["COPY --from=build /opt/venv /opt/venv"]
    assert "USER engram" in runtime and "VOLUME /data" in runtime
    assert any("ENGRAM_DATA_DIR=/data" in i for i in runtime)
    assert any(i.startswith("HEALTHCHECK") and "/xrpc/_health" in i for i in runtime)
    assert runtime[-1] == 'CMD ["engram", "serve"]'
