import multiprocessing
import os
import sys

from simengine.cli import main

code = main()
# End the process without the interpreter's teardown: freeing numba's compiled code and every
# module took about 0.3 s of each command-line replay (benchmarks/cli_startup.py). Every file
# the command wrote is closed by now; only the standard streams are still buffered.
# A pool's workers left running by a failed run (simengine.driver lets them end on their own) would
# outlive os._exit and keep its output open: `... | tail` waited for ever. Nothing reads them now.
for child in multiprocessing.active_children():
    child.terminate()
try:
    sys.stdout.flush()
    sys.stderr.flush()
except BrokenPipeError:  # (output piped into e.g. `head`, which has gone)
    pass
os._exit(code or 0)
