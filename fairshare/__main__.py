"""``python -m fairshare``: the command line (same as the ``fairshare`` command)."""

import sys

from fairshare.cli import main

sys.exit(main())
