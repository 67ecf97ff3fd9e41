"""``python -m fairshare.cli``: the same as ``python -m fairshare``."""

import sys

from fairshare.cli import main

sys.exit(main())
