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
"""
from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys

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

__all__ = ["njit", "types"]
