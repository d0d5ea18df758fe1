"""Identity of what a config executes: its compiled binary and its launch.

Configs of one run often compile to the same machine code (``num_stages`` of a kernel without
loops, a meta-parameter the code never reads). Timing them twice wastes device time and hands
a model two noisy measurements of one thing, so the harvest times one and copies the result.
That is safe only when the *binary* and the *launch* are both identical:

- :func:`binary_hash` hashes the device binary (cubin/hsaco bytes) with the metadata that the
  launcher reads (warps, CTAs, shared memory, scratch sizes, ...). Triton's own
  ``metadata["hash"]`` is its cache key: it covers compile options such as ``num_stages``
  that may leave the binary unchanged, so it would never find two identical binaries.
- :func:`launch_key` hashes the grid and every runtime (non-constexpr) argument.

Triton's interpreter executes the Python source with the meta-parameters and ignores
``num_warps``, ``num_stages``, ``num_ctas`` and ``maxnreg``; what it runs is identified by the
grid and *every* argument, constexprs included (:func:`launch_key` with ``constexprs=True``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from schemas.identity import canonical_json, content_hash

BINARY_KEYS = ("cubin", "hsaco")
"""``asm`` entries that hold the device binary, by backend."""

COMPILE_ONLY_METADATA = frozenset({"hash", "num_stages", "cache_hit", "extern_libs", "ir_override"})
"""Metadata that describes how the binary was built, not how it is launched: its effect, if
any, is in the binary bytes. (``extern_libs`` holds machine paths.) Everything else in the
metadata enters :func:`binary_hash`, so an unknown launch field makes binaries differ, never
wrongly equal."""


def binary_hash(asm: Mapping[str, Any], metadata: Mapping[str, Any]) -> str | None:
    """16-hex hash of the device binary and its launch metadata; None when ``asm`` has no
    binary (a compile that stopped before code generation)."""
    binary = next(
        (asm[key] for key in BINARY_KEYS if isinstance(asm.get(key), (bytes, bytearray))), None
    )
    if binary is None:
        return None
    launch_metadata = {k: v for k, v in metadata.items() if k not in COMPILE_ONLY_METADATA}
    text = json.dumps(launch_metadata, sort_keys=True, separators=(",", ":"), default=repr)
    return content_hash("binary", bytes(binary), text)


def _argument_text(value: Any) -> Any:
    """A JSON-able identity of one launch argument (tensors by dtype, shape and strides:
    the harvest passes the same buffers to every config of a run)."""
    if hasattr(value, "dtype") and hasattr(value, "shape") and hasattr(value, "stride"):
        return {
            "tensor": str(value.dtype),
            "shape": list(value.shape),
            "stride": list(value.stride()),
        }
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    return repr(value)


def launch_key(
    grid: Sequence[int],
    args: Mapping[str, Any],
    constexpr_names: frozenset[str],
    *,
    constexprs: bool = False,
) -> str:
    """16-hex hash of the launch grid and the arguments (runtime ones only, or all of them with
    ``constexprs=True``: the identity of what the interpreter executes)."""
    chosen = {
        name: _argument_text(value)
        for name, value in sorted(args.items())
        if constexprs or name not in constexpr_names
    }
    return content_hash("launch", canonical_json({"grid": [int(g) for g in grid], "args": chosen}))
