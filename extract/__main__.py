"""``python -m extract FILE.ttgir [--format json|summary]`` and
``python -m extract compile FILE.py:KERNEL --signature ... --target sm_90 --out DIR``
(``KERNEL`` may also be ``package.module:KERNEL``).

Thin entry point: arguments -> :class:`extract.commands.DescribeConfig` or
:class:`extract.commands.CompileConfig` (:func:`extract.cli.parse`) ->
:func:`extract.commands.run_command`.
"""

from __future__ import annotations

import sys

from extract.cli import main

__all__ = ["main"]

if __name__ == "__main__":
    sys.exit(main())
