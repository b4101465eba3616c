"""Ready-made platforms and scenarios.

``PLATFORMS[name]`` is a platform dict (``{"clusters": [...]}``) that a scenario uses
with ``platform: {preset: name}``. ``SCENARIOS[name]`` is one complete, runnable
scenario per platform preset. Both are plain data: validate with
:func:`simengine.scenario.load_scenario`.

Topologies (MODELS.md §3-§5; sources: the seed papers listed in docs/reproductions.md):

``multicluster-4x32``
    Ballier et al.: 4 clusters of 32 processors, strict FCFS (its scenario: local streams and
    co-allocated jobs with start deadlines, simengine.grid).
``grid-4site-zikos``
    Zikos & Karatza: 4 sites of 8, 16, 24, 32 processors, equal speed, LWR.
``das2``
    DAS-2 (Mohamed thesis, Table 2.1): 72, 32, 32, 32, 32 dual-CPU nodes, i.e.
    144, 64, 64, 64, 64 processors.
``das2-w30``
    DAS-2 as at the start of KOALA's W30/W50 experiments (thesis Table 5.1):
    144, 56, 56, 64, 64 processors.
``das3``
    DAS-3 (thesis Table 2.2): 85, 32, 41, 68, 46 nodes at VU, Leiden, UvA, Delft
    and the MultimediaN consortium. The thesis calls every cluster "dual-CPU" and
    gives no core counts, so a node counts as 2 processors: 170, 64, 82, 136, 92
    (some DAS-3 nodes had dual-core CPUs; give ``clusters`` explicitly to model
    cores instead).

The DAS presets use the schema's default local scheduler (``fcfs``); file sites and wide-area
bandwidths are not given by the sources and are left out. A transfer within a DAS site takes
time: ``intra_site_bandwidth`` 150 MB/s (MODELS.md §4's decision: the thesis's PGT of 6-9% needs a
non-zero FTT for Close-to-Files with replication).
"""

from __future__ import annotations

import copy
from typing import Any


def _clusters(names: list[str], processors: list[int], scheduler: str | None = None) -> list[dict[str, Any]]:
    out = []
    for name, p in zip(names, processors, strict=True):
        c: dict[str, Any] = {"name": name, "processors": p}
        if scheduler:
            c["scheduler"] = {"name": scheduler}
        out.append(c)
    return out


_DAS_SITES = ["vu", "leiden", "uva", "delft", "utrecht"]
#: MB/s of a file transfer within a DAS site (MODELS.md §4's decision)
DAS_INTRA_SITE = 150.0

PLATFORMS: dict[str, dict[str, Any]] = {
    "multicluster-4x32": {"clusters": _clusters(["c1", "c2", "c3", "c4"], [32, 32, 32, 32], "fcfs")},
    "grid-4site-zikos": {"clusters": _clusters(["site1", "site2", "site3", "site4"], [8, 16, 24, 32], "lwr")},
    "das2": {"clusters": _clusters(_DAS_SITES, [144, 64, 64, 64, 64]), "intra_site_bandwidth": DAS_INTRA_SITE},
    "das2-w30": {"clusters": _clusters(_DAS_SITES, [144, 56, 56, 64, 64]), "intra_site_bandwidth": DAS_INTRA_SITE},
    "das3": {"clusters": _clusters(["vu", "leiden", "uva", "delft", "multimedian"], [170, 64, 82, 136, 92]),
             "intra_site_bandwidth": DAS_INTRA_SITE},
}

_RSD_LOCAL = {"kind": "rsd", "low": 1, "high": 32, "q": 0.9}


def _local_streams(clusters: list[str], load: float, size: dict, runtime: dict) -> list[dict[str, Any]]:
    return [
        {
            "kind": "synthetic",
            "name": f"local-{c}",
            "target": c,
            "arrival": {"target_load": load},
            "size": size,
            "runtime": runtime,
        }
        for c in clusters
    ]


SCENARIOS: dict[str, dict[str, Any]] = {
    "multicluster-4x32": {
        "name": "Ballier et al. co-allocation with start deadlines, Wait-10, GP",
        "description": (
            "Ballier et al.'s platform: per cluster a Poisson stream of local jobs (size RSD(1,32,0.9), runtime "
            "exponential mean 100 s, local load 30%, strict FCFS) and one stream of global co-allocated jobs "
            "(2..4 components of size RSD(4,32,0.9), runtime exponential mean 200 s, global load 20%, start "
            "deadline uniform on [1, 3599] s); Worst-Fit placement, RPP with L_p 0.7, Wait-10, GP."
        ),
        "platform": {"preset": "multicluster-4x32"},
        "workload": {
            "streams": _local_streams(
                ["c1", "c2", "c3", "c4"], 0.3, _RSD_LOCAL, {"kind": "exponential", "mean": 100}
            )
            + [
                {
                    "kind": "coallocated",
                    "name": "global",
                    "arrival": {"target_load": 0.2},
                    "components": {"kind": "uniform", "low": 2, "high": 4, "integer": True},
                    "size": {"kind": "rsd", "low": 4, "high": 32, "q": 0.9},
                    "runtime": {"kind": "exponential", "mean": 200},
                    "deadline": {"min": 1, "max": 3599},
                }
            ]
        },
        "grid": {
            "placement": {"name": "worst-fit"},
            "deadline_policy": {"name": "rpp", "params": {"lp": 0.7, "wait_x": 10, "priority": "GP"}},
        },
        "run": {"seed": 1, "stop": {"horizon": 200000}, "warmup": {"time": 10000}},
    },
    "grid-4site-zikos": {
        "name": "Zikos Random, high load",
        "description": (
            "Zikos & Karatza: 4 sites (8/16/24/32 processors, LWR), one-processor jobs with bounded-Pareto "
            "demands (alpha 1.5, H 100, mean 1), 1/lambda = 0.014 (load about 90%), Random site allocation; "
            "80,000 completions, the first 5,000 are warm-up."
        ),
        "platform": {"preset": "grid-4site-zikos"},
        "workload": {
            "streams": [
                {
                    "kind": "synthetic",
                    "name": "grid",
                    "target": "grid",
                    "arrival": {"mean_interarrival": 0.014},
                    "size": {"kind": "constant", "value": 1},
                    "runtime": {"kind": "bounded_pareto", "alpha": 1.5, "high": 100, "mean": 1},
                }
            ]
        },
        "grid": {"site_allocation": {"name": "random"}},
        "run": {"seed": 1, "stop": {"completions": 80000}, "warmup": {"completions": 5000}},
    },
    "das2": {
        "name": "DAS-2 rigid jobs at 60% load",
        "description": (
            "DAS-2 (144/64/64/64/64 processors): one grid stream of rigid jobs, size uniform 1..64, "
            "runtime exponential mean 600 s, estimates 1-3x the runtime, 60% offered load, one day."
        ),
        "platform": {"preset": "das2"},
        "workload": {
            "streams": [
                {
                    "kind": "synthetic",
                    "name": "grid",
                    "target": "grid",
                    "arrival": {"target_load": 0.6},
                    "size": {"kind": "uniform", "low": 1, "high": 64, "integer": True},
                    "runtime": {"kind": "exponential", "mean": 600},
                    "estimate": {"kind": "factor", "factor": {"kind": "uniform", "low": 1, "high": 3}},
                }
            ]
        },
        "run": {"seed": 1, "stop": {"horizon": 86400}},
    },
    "das2-w30": {
        "name": "KOALA W30 (single-component approximation)",
        "description": (
            "DAS-2 as in KOALA's W30 experiment (144/56/56/64/64): background load of 30% per cluster and "
            "200 grid jobs of total size 8-64 (1, 2 or 4 components of 8 or 16 processors, equally likely) "
            "at 30% of the system. Until multi-component jobs are in the schema the jobs are rigid "
            "single-component jobs and their runtime (192 s for size-8, 90 s for size-16 components) is "
            "drawn independently of the size."
        ),
        "platform": {"preset": "das2-w30"},
        "workload": {
            "streams": [
                {
                    "kind": "synthetic",
                    "name": "koala",
                    "target": "grid",
                    "arrival": {"target_load": 0.3},
                    "size": {"kind": "choice", "values": [8, 16, 32, 64], "weights": [1, 2, 2, 1]},
                    "runtime": {"kind": "choice", "values": [192, 90]},
                    "count": 200,
                }
            ]
            + _local_streams(_DAS_SITES, 0.3, _RSD_LOCAL, {"kind": "exponential", "mean": 300})
        },
        "run": {"seed": 1, "stop": {"horizon": 10000}},
    },
    "das3": {
        "name": "DAS-3 rigid jobs at 70% load",
        "description": (
            "DAS-3 (170/64/82/136/92 processors, a node counted as 2 processors): one grid stream, size "
            "RSD(1,64,0.9), runtime hyper-exponential (90% mean 300 s, 10% mean 3600 s), 70% offered load, "
            "one day."
        ),
        "platform": {"preset": "das3"},
        "workload": {
            "streams": [
                {
                    "kind": "synthetic",
                    "name": "grid",
                    "target": "grid",
                    "arrival": {"target_load": 0.7},
                    "size": {"kind": "rsd", "low": 1, "high": 64, "q": 0.9},
                    "runtime": {"kind": "hyperexponential", "p": [0.9, 0.1], "means": [300, 3600]},
                }
            ]
        },
        "run": {"seed": 1, "stop": {"horizon": 86400}},
    },
}


def platform(name: str) -> dict[str, Any]:
    """A deep copy of ``PLATFORMS[name]`` (raises ``KeyError`` listing the known names)."""
    try:
        return copy.deepcopy(PLATFORMS[name])
    except KeyError:
        raise KeyError(f"unknown platform preset {name!r}; known: {', '.join(sorted(PLATFORMS))}") from None


def scenario(name: str) -> dict[str, Any]:
    """A deep copy of ``SCENARIOS[name]`` (raises ``KeyError`` listing the known names)."""
    try:
        return copy.deepcopy(SCENARIOS[name])
    except KeyError:
        raise KeyError(f"unknown scenario preset {name!r}; known: {', '.join(sorted(SCENARIOS))}") from None
