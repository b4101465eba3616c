"""numba, as the engine's compiled parts import it: ``from simengine.jit import njit``.

One thing is done here before numba's CPU target starts (on the first compiled call, whether
loaded from numba's cache or compiled): numba then checks that a BLAS exists, for ``np.dot`` and
``np.linalg``, by importing ``scipy.linalg.cython_blas``. Importing it the usual way runs the
``scipy.linalg`` package first, which imports most of scipy's array layer and numpy's lazy
submodules (f2py, testing): 0.1-0.2 s of a 1.2 s command-line replay (benchmarks/cli_startup.py),
for a check whose answer no kernel here uses. So the extension module is loaded on its own, under
its own name, before numba looks: numba finds it in ``sys.modules`` (and would use it for BLAS as
it is, the same module). ``scipy.linalg`` imported later runs as usual and shares it; only its
attribute ``scipy.linalg.cython_blas`` is then missing (``from scipy.linalg import cython_blas``
still works). Anything unexpected (no scipy, another layout) leaves numba to import it itself.

Two more things are done here: :func:`load_own_copies` (see its docstring), and, at import, numba's
cached objects of the engine are dropped when any engine source file changed since they were
written (:func:`_drop_stale_caches`).
"""
from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import os
import sys
from pathlib import Path

BLAS_MODULE = "scipy.linalg.cython_blas"


def _load_blas_module() -> None:
    if BLAS_MODULE in sys.modules or "scipy.linalg" in sys.modules:
        return
    try:
        scipy = importlib.util.find_spec("scipy")  # (finds the package without importing it)
        if scipy is None or not scipy.submodule_search_locations:
            return
        folder = os.path.join(scipy.submodule_search_locations[0], "linalg")
        path = next((os.path.join(folder, "cython_blas" + suffix) for suffix in importlib.machinery.EXTENSION_SUFFIXES
                     if os.path.exists(os.path.join(folder, "cython_blas" + suffix))), None)
        if path is None:
            return
        spec = importlib.util.spec_from_file_location(BLAS_MODULE, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[BLAS_MODULE] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[BLAS_MODULE]
            raise
    except Exception:  # noqa: BLE001 - numba imports it the usual way
        return


_load_blas_module()

from numba import njit, types  # noqa: E402  (after the module above is in place)
from numba.core import caching as _caching  # noqa: E402
from numba.core.registry import CPUDispatcher  # noqa: E402

ENGINE = Path(__file__).resolve().parent
STAMP_NAME = "gridweb-engine-sources.stamp"


def _sources_stamp(sources: list[Path]) -> str:
    """A digest of the engine source files' paths, sizes and modification times."""
    h = hashlib.sha256()
    for path in sources:
        st = path.stat()
        h.update(f"{path.relative_to(ENGINE)}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


def _cache_dir(py_file: Path) -> Path | None:
    """Where numba keeps the cached objects of ``py_file``'s functions (its own choice of place)."""
    def probe():
        pass
    for cls in (_caching.UserProvidedCacheLocator, _caching.InTreeCacheLocator, _caching.UserWideCacheLocator):
        locator = cls.from_function(probe, str(py_file))
        if locator is None:
            continue
        try:
            locator.ensure_cache_path()
        except OSError:
            continue
        return Path(locator.get_cache_path())
    return None


def _drop_stale_caches() -> None:
    """Delete numba's cached objects of the engine when any engine source changed since they were written.

    Why: numba invalidates a function's cached object only when the function's own file changes
    (numba's caching notes, "Cache invalidation fails to recognize changes in symbols defined in
    a different file"), while the object holds copies of every function it calls. After an
    upgrade in place (git pull) that changed, say, the profile helpers but not the conservative
    kernel, the kernel would go on running the old helpers under the new engine version. One
    digest of all engine sources, kept beside the cache, decides: on a change every cached
    object of the engine goes and is compiled again on first use. Costs about 2 ms a process
    when nothing changed. Anything unexpected leaves the caches as they are."""
    try:
        sources = sorted(ENGINE.rglob("*.py"))
        stamp = _sources_stamp(sources)
        home = _cache_dir(ENGINE / "jit.py")
        if home is None:
            return
        marker = home / STAMP_NAME
        if marker.exists() and marker.read_text() == stamp:
            return
        for source in {p.parent: p for p in sources}.values():  # one file per folder finds its cache
            cache = _cache_dir(source)
            if cache is None or not cache.is_dir():
                continue
            for f in list(cache.glob("*.nbi")) + list(cache.glob("*.nbc")):
                f.unlink(missing_ok=True)
        marker.write_text(stamp)
    except OSError:
        return


_drop_stale_caches()

__all__ = ["load_own_copies", "njit", "types"]

_loaded: set[int] = set()  # dispatchers load_own_copies has handled in this process


def _callees(dispatcher):
    """The compiled functions ``dispatcher``'s Python code names as globals."""
    names = dispatcher.py_func.__globals__
    codes = [dispatcher.py_func.__code__]
    while codes:
        code = codes.pop()
        for name in code.co_names:
            if isinstance(names.get(name), CPUDispatcher):
                yield names[name]
        codes.extend(c for c in code.co_consts if hasattr(c, "co_names"))


def load_own_copies(*dispatchers) -> list:
    """Load ``dispatchers`` from numba's cache, each after the compiled functions it calls.

    Why: a compiled function's cached object holds a copy of every function it calls, and a
    process that loads the caller first runs those copies; one that compiled the callees, or
    loaded them first, runs the callees' own objects instead. Same source, but measured on
    2026-11-29 (DAS2-fs1, load 0.85, ``benchmarks/local_events.py --copies``): the conservative
    kernel ran about 23,500 jobs/s on the embedded copies against 33,500 on the callees' own, the
    event core (reservations, priorities, suspend/resume) 16,300 against 19,600-23,000; the copies
    of ``compress`` and ``replan_queue`` are the slow ones (why, numba's object code does not
    say). An hour later the same script measured no gap (1.01x), and at 06:05 1.36x and 1.24x
    again (docs/performance.md): the copies are slower in some hours, the own objects never
    measured slower, and loading the callees first costs little, so it stays. The
    callers of those hot functions call this first; it adds about 0.05 s to a process's first
    conservative run.

    Only overloads already in the cache, for the current source, are loaded (nothing is
    compiled here); anything unexpected from numba's internals leaves it to numba (correct
    either way, only slower). Idempotent and cheap after the first call. Returns the functions
    handled by this call, in the order they were loaded.
    """
    order: list = []

    def visit(d) -> None:
        if id(d) in _loaded:
            return
        _loaded.add(id(d))
        for callee in _callees(d):
            visit(callee)
        order.append(d)

    for d in dispatchers:
        visit(d)
    for d in order:
        try:
            cache = d._cache
            index = cache._cache_file._load_index()
            codegen = d.targetctx.codegen()
            for key in index:
                if key[0] not in d.overloads and key == cache._index_key(key[0], codegen):
                    d.compile(key[0])
        except Exception:  # noqa: BLE001 - numba's cache layout changed: it loads as usual
            continue
    return order
