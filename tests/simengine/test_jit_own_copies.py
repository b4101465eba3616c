"""simengine.jit.load_own_copies: a compiled function and, first, the ones it calls are loaded
from numba's cache as their own objects (so a caller loaded afterwards calls those, not the
copies in its own cached object); nothing is compiled, and an empty cache loads nothing.

Each step runs in a fresh process with its own numba cache directory, as a user's run would."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

from tests.conftest import ROOT

MODULE = textwrap.dedent("""
    from simengine.jit import njit

    @njit(cache=True)
    def leaf(x):
        return x + 1.0

    @njit(cache=True)
    def middle(x):
        return leaf(x) * 2.0

    @njit(cache=True)
    def top(x):
        s = 0.0
        for k in range(3):
            s += middle(x + k) + leaf(x)
        return s

    @njit(cache=True)
    def unrelated(x):
        return -x
""")

REPORT = textwrap.dedent("""
    import json, sys
    import toy
    from simengine.jit import load_own_copies
    order = [d.py_func.__name__ for d in load_own_copies(toy.top)]
    again = load_own_copies(toy.top)  # idempotent: nothing left to do
    fns = (toy.leaf, toy.middle, toy.top, toy.unrelated)
    loaded = {d.py_func.__name__: len(d.overloads) for d in fns}
    hits = {d.py_func.__name__: sum(d._cache_hits.values()) for d in fns}
    misses = {d.py_func.__name__: sum(d._cache_misses.values()) for d in fns}
    print(json.dumps({"order": order, "again": len(again), "loaded": loaded, "hits": hits, "misses": misses,
                      "value": toy.top(1.0)}))
""")


def _run(code: str, folder, cache) -> str:
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache), "PYTHONPATH": os.pathsep.join([str(folder), str(ROOT)])}
    out = subprocess.run([sys.executable, "-c", code], cwd=folder, env=env, check=True, capture_output=True, text=True)
    return out.stdout.strip().splitlines()[-1]


def test_callees_load_first_from_the_cache_and_nothing_compiles(tmp_path):
    (tmp_path / "toy.py").write_text(MODULE)
    cache = tmp_path / "cache"
    # an empty cache: nothing to load (the call then compiles all three, filling the cache)
    cold = json.loads(_run(REPORT, tmp_path, cache))
    assert cold["order"] == ["leaf", "middle", "top"]  # callees before their callers
    assert cold["hits"] == {"leaf": 0, "middle": 0, "top": 0, "unrelated": 0}
    assert cold["value"] == 24.0  # sum over k of 2 (1 + k + 1) + 2
    # a later process: every overload comes from the cache, callees first, before top is called
    warm = json.loads(_run(REPORT, tmp_path, cache))
    assert warm["order"] == ["leaf", "middle", "top"]
    assert warm["again"] == 0
    assert warm["loaded"] == {"leaf": 1, "middle": 1, "top": 1, "unrelated": 0}
    assert warm["hits"] == {"leaf": 1, "middle": 1, "top": 1, "unrelated": 0}
    assert warm["misses"] == {"leaf": 0, "middle": 0, "top": 0, "unrelated": 0}
    assert warm["value"] == cold["value"]


ENGINE = textwrap.dedent("""
    import json
    import numpy as np
    from simengine.local.cluster import ClusterSim
    from simengine.local.profile import replan_queue
    from simengine.schedulers import conservative
    one = np.array([0.0, 1.0])
    if __import__("sys").argv[1] == "warm":  # fill numba's cache, whatever ran before
        ClusterSim(2, "conservative", one, one, one, np.array([1, 2]), priority=np.array([0, 1])).run()
        conservative.schedule(one, one, one, np.array([1, 2]), 2, conservative.BackfillParams())
    sim = ClusterSim(2, "conservative", one, one, one, np.array([1, 2]), priority=np.array([0, 1]))
    core_loaded = len(conservative.compress.overloads), len(replan_queue.overloads)
    sim.run()
    conservative.schedule(one, one, one, np.array([1, 2]), 2, conservative.BackfillParams())
    print(json.dumps({"core": core_loaded, "hits": sum(conservative.compress._cache_hits.values()),
                      "misses": sum(conservative.compress._cache_misses.values())}))
""")


def test_the_event_core_and_the_kernel_call_the_own_objects_of_compress_and_replan_queue():
    """Before the event core runs, compress and replan_queue are loaded on their own (a process
    running only the core's embedded copies would never touch their dispatchers); the kernel's
    overload of compress comes too, from the cache, not compiled."""
    subprocess.run([sys.executable, "-c", ENGINE, "warm"], cwd=ROOT, check=True, capture_output=True, text=True)
    out = subprocess.run([sys.executable, "-c", ENGINE, "check"], cwd=ROOT, check=True, capture_output=True,
                         text=True)
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen["core"][0] >= 1 and seen["core"][1] >= 1, seen
    assert seen["hits"] >= 2 and seen["misses"] == 0, seen


def test_a_changed_engine_source_drops_every_cached_object_of_the_engine(tmp_path):
    """numba drops a function's cached object only when its own file changes, though the object
    embeds its callees; simengine.jit drops all of the engine's when any engine source changed
    (on a copy of the engine, with stand-in cache files)."""
    import shutil

    engine = tmp_path / "simengine"
    shutil.copytree(ROOT / "simengine", engine, ignore=shutil.ignore_patterns("__pycache__"))
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env["PYTHONPATH"] = str(tmp_path)
    env["PYTHONDONTWRITEBYTECODE"] = "1"

    def import_engine():
        subprocess.run([sys.executable, "-c", "import simengine.jit"], cwd=tmp_path, env=env, check=True,
                       capture_output=True, text=True)

    def plant() -> list:
        files = [engine / "__pycache__" / "x.f-1.py311.nbi", engine / "schedulers" / "__pycache__" / "y.g-2.py311.1.nbc"]
        for f in files:
            f.parent.mkdir(exist_ok=True)
            f.write_bytes(b"stand-in")
        return files

    import_engine()  # first import: the digest is written
    marker = engine / "__pycache__" / "gridweb-engine-sources.stamp"
    assert marker.exists()
    planted = plant()
    import_engine()  # nothing changed: the cached objects stay
    assert all(f.exists() for f in planted)
    before = marker.read_text()
    profile = engine / "schedulers" / "_linked_profile.py"
    profile.write_text(profile.read_text() + "\n# changed\n")  # one callee's file, not the callers'
    import_engine()
    assert not any(f.exists() for f in planted)  # every engine folder's objects went, not only that file's
    assert marker.read_text() != before
    planted = plant()
    import_engine()  # and the new digest holds
    assert all(f.exists() for f in planted)
