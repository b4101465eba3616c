import sys

from simengine.cli import main

sys.exit(main())
