"""The arguments one config of a recorded tuning launches with, for compiling its IR.

Triton's autotuner, before it benchmarks a config, merges the config's kwargs into the call's
arguments and runs the config's ``pre_hook`` and then the autotuner's own (``reset_to_zero``,
``restore_value``, or a user's ``pre_hook``) on them (``Autotuner._bench``). A hook may change
what the compiler sees: liger-kernel's fused MLP sets each ``TensorDescriptor``'s
``block_shape`` from the config's block sizes. So each config's IR is compiled with the
arguments that config launched with, rebuilt here the same way -- on copies, never on the
workload's own objects: tensors are shadowed by meta tensors of the same shape, strides and
dtype while the hooks run (a hook that zeroes or restores data touches nothing real), and
descriptors are copied. The compile then gets the workload's tensors back (their alignment is
what Triton specialized on) and the hooked copies of everything else.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

__all__ = ["HookReplayError", "config_arguments", "is_descriptor", "shadow"]


class HookReplayError(RuntimeError):
    """A config's hook failed on the copies; the message names the hook."""


def is_descriptor(value: Any) -> bool:
    """A host-side ``TensorDescriptor`` (``triton.tools.tensor_descriptor``): what the compiler
    reads of it is its base tensor's dtype and its ``block_shape``."""
    return all(hasattr(value, name) for name in ("base", "block_shape", "strides", "padding"))


def shadow(value: Any) -> Any:
    """``value`` with no data of the workload's: a tensor as a meta tensor of the same shape,
    strides and dtype (all the compiler reads of it, and a meta tensor is aligned), a
    descriptor as a copy on such a shadow of its base (its own ``block_shape`` list, for hooks
    to set), anything else as it is."""
    import torch

    if torch.is_tensor(value):
        return torch.empty_strided(
            tuple(value.shape), tuple(value.stride()), dtype=value.dtype, device="meta"
        )
    if is_descriptor(value):
        twin = copy.copy(value)
        twin.base = shadow(value.base)
        twin.block_shape = list(value.block_shape)
        return twin
    return value


def _restore(hooked: Any, original: Any) -> Any:
    """The value to compile with: the workload's tensor for a tensor shadow, a hooked
    descriptor on the workload's base, any other value as the hooks left it."""
    import torch

    if torch.is_tensor(hooked) and hooked.device.type == "meta" and torch.is_tensor(original):
        return original
    if is_descriptor(hooked) and is_descriptor(original):
        result = copy.copy(hooked)
        result.base = original.base
        return result
    return hooked


def config_arguments(autotuner: Any, config: Any, args: Mapping[str, Any]) -> dict[str, Any]:
    """The call's ``args`` as ``config`` (a ``triton.Config``) launched with them: its kwargs
    merged in, its ``pre_hook`` and the autotuner's replayed on copies. Raises
    :class:`HookReplayError` when a hook fails."""
    if config is None:  # not one of the autotuner's configs: nothing to replay
        return dict(args)
    kwargs = dict(getattr(config, "all_kwargs", lambda: config.kwargs)())
    nargs = {name: shadow(value) for name, value in args.items()}
    nargs.update(kwargs)
    hooks = [("the config's pre_hook", getattr(config, "pre_hook", None))]
    if autotuner is not None and getattr(autotuner, "pre_hook", None) is not None:
        hooks.append(("the autotuner's pre_hook (reset_to_zero / restore_value)", autotuner.pre_hook))
    saved = dict(vars(autotuner)) if autotuner is not None else {}
    try:
        for name, hook in hooks:
            if hook is None:
                continue
            try:
                hook(nargs)
            except Exception as exc:
                raise HookReplayError(
                    f"{name} failed on copies of the arguments: {type(exc).__name__}: {exc}"
                ) from exc
    finally:  # Triton's restore_value hook keeps its copies on the autotuner: put back its state
        if autotuner is not None:
            vars(autotuner).clear()
            vars(autotuner).update(saved)
    merged = {name: _restore(value, args.get(name)) for name, value in nargs.items()}
    return {name: value for name, value in merged.items() if name in args or name in kwargs}
