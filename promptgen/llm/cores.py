"""How many threads the embedded model computes with: one per physical core this process
may run on (llama.cpp's matrix work gains little from a second hyperthread of a core,
and loses much when its threads outnumber the cores). PROMPTGEN_LOCAL_THREADS sets it."""

from __future__ import annotations

import os
from pathlib import Path

SYS_CPU = Path("/sys/devices/system/cpu")


def allowed_cpus() -> set[int]:
    """The logical CPUs this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return set(os.sched_getaffinity(0))
    return set(range(os.cpu_count() or 1))


def physical_cores(root: Path = SYS_CPU, cpus: set[int] | None = None) -> int:
    """Distinct (package, core) pairs among the allowed CPUs, read from sysfs; the count
    of allowed CPUs where the topology cannot be read."""
    forced = os.environ.get("PROMPTGEN_LOCAL_THREADS", "")
    if forced.isdigit() and int(forced) > 0:
        return int(forced)
    cpus = allowed_cpus() if cpus is None else cpus
    cores = set()
    for cpu in cpus:
        topology = root / f"cpu{cpu}" / "topology"
        try:
            package = (topology / "physical_package_id").read_text().strip()
            core = (topology / "core_id").read_text().strip()
        except OSError:
            return max(1, len(cpus))
        cores.add((package, core))
    return max(1, len(cores))
