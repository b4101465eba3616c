"""Upload bombs for the upload tests (a fresh process measures the reader with them, the full
stack's server is sent them): small gzip files of huge content, and the peak memory of a process."""
from __future__ import annotations

import zlib


def gzip_of(piece: bytes, total: int, head: bytes = b"") -> bytes:
    """A gzip file of ``head`` and then ``piece`` repeated to ``total`` bytes, made a megabyte at a time."""
    z = zlib.compressobj(9, zlib.DEFLATED, 31)  # gzip framing
    chunk = piece * max(1, (1 << 20) // len(piece))
    out, made = [z.compress(head)], 0
    while made < total:
        out.append(z.compress(chunk))
        made += len(chunk)
    out.append(z.flush())
    return b"".join(out)


def peak_mb(pid: int | str = "self") -> float:
    """A process's peak resident memory (VmHWM), in MB."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM")
