import os
import sys

from simengine.cli import main

code = main()
# End the process without the interpreter's teardown: freeing numba's compiled code and every
# module took about 0.3 s of each command-line replay (benchmarks/cli_startup.py). Every file
# the command wrote is closed by now and its worker processes have ended; only the standard
# streams are still buffered.
try:
    sys.stdout.flush()
    sys.stderr.flush()
except BrokenPipeError:  # (output piped into e.g. `head`, which has gone)
    pass
os._exit(code or 0)
