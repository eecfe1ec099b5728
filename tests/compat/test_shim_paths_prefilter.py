"""The shim error middleware only walks the shims' paths for a request whose first path segment one of
them owns (engram/compat/errors.py); the prefilter must never hide a path a shim owns."""

from engram.compat import discover_shims
from engram.compat.errors import _roots, owner

SHIMS = discover_shims()


def _candidates() -> list[str]:
    paths = ["/", "/xrpc/garden.engram.searchMemories", "/xrpc/_health", "/console/", "/mcp", "/v1", "/v"]
    for shim in SHIMS:
        for p in (*shim.paths, shim.openapi_path):
            paths += [p, p + "/x", p.rstrip("/") + "/deep/er", p + "x", p[:-1]]
    return paths


def test_every_owned_path_passes_the_prefilter():
    roots = _roots(SHIMS)
    owned = [path for path in _candidates() if owner(SHIMS, path) is not None]
    assert len(owned) > 3 * len(SHIMS)  # the candidates do reach the shims
    assert all(path.startswith(roots) for path in owned)


def test_xrpc_paths_skip_the_walk():
    assert not "/xrpc/garden.engram.searchMemories".startswith(_roots(SHIMS))
