"""``python -m train.replay``: see :mod:`train.replay.cli`."""

from __future__ import annotations

import sys

from train.replay.cli import main

if __name__ == "__main__":
    sys.exit(main())
