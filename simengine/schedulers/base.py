"""What every local scheduler receives and returns."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class ClusterSchedule:
    """Outcome of simulating one cluster.

    ``start`` and ``end`` are per job (NaN when the job never started before the
    simulation stopped); ``killed`` marks jobs ended by walltime enforcement.
    """

    start: np.ndarray
    end: np.ndarray
    killed: np.ndarray
