"""A temporary checkout of another revision of this repository, for the benchmarks that measure
it side by side (``--peer REV``): ``with checkout("HEAD~1", tmp) as peer: ...`` runs the peer's
code from ``peer`` with this checkout's virtualenv, and removes the worktree afterwards."""
from __future__ import annotations

import subprocess
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

ROOT = Path(__file__).resolve().parents[1]


@contextmanager
def checkout(rev: str, where: Path) -> Iterator[Path]:
    """``rev`` checked out (detached) at ``where``, a folder that must not exist yet."""
    subprocess.run(["git", "worktree", "add", "--detach", str(where), rev], cwd=ROOT, check=True, capture_output=True)
    try:
        yield where
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(where)], cwd=ROOT, capture_output=True)
