"""The CPU a cgroup quota lets this process use, in cores (docs/internals.md#using-every-core).

A container limited with `docker run --cpus 2` or a Kubernetes CPU limit still sees every core of the host
in its affinity mask: the limit is a quota of CPU time per period (cgroup v2 `cpu.max`, v1
`cpu.cfs_quota_us` / `cpu.cfs_period_us`), not a set of cores. Sizing the serving processes and the build
threads by the mask alone would start one process per host core, each with its own copy of every index,
all throttled to the same two cores' worth of time.

Hand-written because the standard library reads only the mask (`os.sched_getaffinity`; Python 3.13's
`os.process_cpu_count` too) and no maintained package does just this; it is a few files of the kernel's
documented format (the files and their fields: docs/internals.md#using-every-core, "How many.").
"""

from __future__ import annotations

from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")
PROC_CGROUP = Path("/proc/self/cgroup")


def quota_cores(root: Path = CGROUP_ROOT, membership: Path = PROC_CGROUP) -> float | None:
    """The tightest CPU quota on this process's cgroup or any cgroup above it, in cores (quota ÷ period),
    or None when there is none (or no cgroup filesystem to read: not Linux, or not mounted)."""
    try:
        lines = membership.read_text().splitlines()
    except OSError:
        return None
    limits: list[float] = []
    for line in lines:
        hierarchy, _, rest = line.partition(":")
        controllers, _, path = rest.partition(":")
        if hierarchy == "0" and controllers == "":  # cgroup v2: one unified hierarchy
            limits += _v2_limits(root, path)
        elif "cpu" in controllers.split(","):  # cgroup v1: the cpu controller's own hierarchy
            limits += _v1_limits(root, controllers, path)
    return min(limits) if limits else None


def _chain(mount: Path, path: str) -> list[Path]:
    """The cgroup's directory and every one above it up to the mount. Inside a container the path named in
    /proc/self/cgroup is often the host's and not mounted there: then only the mount's own files count."""
    here = mount / path.strip("/")
    if not here.is_dir():
        return [mount]
    return [here, *[p for p in here.parents if p == mount or mount in p.parents]]


def _v2_limits(root: Path, path: str) -> list[float]:
    mount = root / "unified" if (root / "unified" / "cgroup.controllers").exists() else root
    out = []
    for directory in _chain(mount, path):
        try:
            quota, period = (directory / "cpu.max").read_text().split()
        except (OSError, ValueError):
            continue
        if quota != "max" and float(period) > 0:
            out.append(float(quota) / float(period))
    return out


def _v1_limits(root: Path, controllers: str, path: str) -> list[float]:
    mount = next((m for m in (root / controllers, root / "cpu", root / "cpu,cpuacct") if m.is_dir()), None)
    if mount is None:
        return []
    out = []
    for directory in _chain(mount, path):
        try:
            quota = float((directory / "cpu.cfs_quota_us").read_text())
            period = float((directory / "cpu.cfs_period_us").read_text())
        except (OSError, ValueError):
            continue
        if quota > 0 and period > 0:  # -1: no quota
            out.append(quota / period)
    return out
