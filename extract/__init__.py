"""Triton device IR -> graphs with data and region edges; static SASS statistics; compiling
kernels for an explicit GPU target without a GPU.

Public API (imported lazily so ``import extract`` stays cheap):

- :class:`extract.graph.IrGraph` -- ``from_text`` / ``from_file`` / ``from_compiled``,
  ``to_node_link``, ``to_networkx``, ``to_arrow``.
- :func:`extract.compile.compile_call`, :func:`extract.compile.parse_target`,
  :class:`extract.compile.CompileResult`.
- :func:`extract.sass.static_stats`, :class:`extract.sass.SassStats`.

All use of Triton's private API is confined to :mod:`extract.triton_compat`.
"""

from __future__ import annotations

from typing import Any

from schemas.extras import require_extra

require_extra("extract", "extract", ("torch", "triton", "numpy", "networkx"))

__all__ = [
    "CompileResult",
    "IrGraph",
    "IrParseError",
    "SassStats",
    "compile_call",
    "parse_target",
    "static_stats",
]

_LAZY = {
    "IrGraph": "extract.graph",
    "IrParseError": "extract.graph",
    "CompileResult": "extract.compile",
    "compile_call": "extract.compile",
    "parse_target": "extract.compile",
    "SassStats": "extract.sass",
    "static_stats": "extract.sass",
}


def __getattr__(name: str) -> Any:
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError(f"module 'extract' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module_name), name)
