"""simengine.jit: numba's BLAS probe is answered without importing the scipy.linalg package (a
tenth of a command-line replay), and BLAS still works: numba's np.dot and scipy.linalg imported
later both use the one cython_blas module."""
from __future__ import annotations

import json
import subprocess
import sys

from tests.conftest import ROOT

CODE = """
import json, sys
import numpy as np
from simengine import kernel_model
kernel_model.warm_up_kernels(["fcfs"])  # numba's CPU target starts: its BLAS probe runs
import numba.np.arraymath as arraymath
before = {"linalg_imported": "scipy.linalg" in sys.modules, "numba_sees_blas": arraymath._HAVE_BLAS}
from simengine.jit import njit

@njit
def dot(a, b):
    return np.dot(a, b)

a = np.arange(12.0).reshape(3, 4); b = np.arange(8.0).reshape(4, 2)
import scipy.linalg
from scipy.linalg import cython_blas
print(json.dumps({**before, "numba_dot_right": bool(np.array_equal(dot(a, b), a @ b)),
                  "one_module": cython_blas is sys.modules["scipy.linalg.cython_blas"],
                  "scipy_dgemm_right": bool(np.allclose(scipy.linalg.blas.dgemm(1.0, a, b), a @ b))}))
"""


def test_numba_finds_blas_without_the_scipy_linalg_package_and_blas_works():
    out = subprocess.run([sys.executable, "-c", CODE], cwd=ROOT, check=True, capture_output=True, text=True)
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen == {"linalg_imported": False, "numba_sees_blas": True, "numba_dot_right": True,
                    "one_module": True, "scipy_dgemm_right": True}
