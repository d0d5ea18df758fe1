"""``python -m train.replay``: see :mod:`train.replay.cli`."""

from __future__ import annotations

import sys

from schemas.signals import stop_on_termination, stopped

if __name__ == "__main__":
    try:  # the imports take seconds (torch): a Ctrl-C or SIGTERM then gets its one line too
        with stop_on_termination():
            from train.replay.cli import main
    except KeyboardInterrupt as stop:
        what, code = stopped(stop)
        print(f"{what}: nothing written", file=sys.stderr)
        sys.exit(code)
    sys.exit(main())
