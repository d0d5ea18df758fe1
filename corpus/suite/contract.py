"""The suite contract, checked on any suite (``python -m corpus.suite check --suite ...``).

What a harvest relies on, verified without launching anything (meta tensors only): the
default config is valid on every ``tiny`` and ``default`` shape and dtype; meta inputs hold
every output and bind every kernel parameter (with a positive integer grid and the config's
meta-parameters unchanged); the config space's knobs are constexpr parameters of the kernel.
The built-in suite's tests check the same and more (tests/corpus/suite/test_families.py).
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any

from corpus.suite.spec import KernelSpec, shape_name

CONTRACT_SCALES = ("tiny", "default")


@dataclass(frozen=True)
class ContractProblem:
    family: str
    where: str
    problem: str

    def __str__(self) -> str:
        return f"{self.family} {self.where}: {self.problem}"


def constexpr_parameters(kernel: Any) -> set[str]:
    """``tl.constexpr`` parameters of a jitted kernel, compiled (``JITFunction.params``) or
    interpreted (the Python function's annotations: the check may run on the interpreter)."""
    params = getattr(kernel, "params", None)
    if params is not None:
        return {p.name for p in params if p.is_constexpr}
    function = getattr(kernel, "fn", kernel)
    return {
        name
        for name, p in inspect.signature(function).parameters.items()
        if "constexpr" in str(p.annotation)
    }


def _knobs(spec: KernelSpec) -> list[ContractProblem]:
    space = spec.config_space()
    problems = []
    if spec.default_config() not in space:
        problems.append(
            ContractProblem(spec.name, "config space", "the default config is not in the space")
        )
    constexprs = constexpr_parameters(spec.kernel)
    stray = sorted({k for config in space for k in config.kwargs} - constexprs)
    if stray:
        problems.append(
            ContractProblem(
                spec.name,
                "config space",
                f"knobs {stray} are not constexpr parameters of the kernel",
            )
        )
    return problems


def _binding(
    spec: KernelSpec, dims: dict[str, int], dtype: str, where: str
) -> list[ContractProblem]:
    inputs = spec.make_inputs(dims, dtype, "meta", seed=0)
    missing_outputs = sorted(set(spec.outputs) - set(inputs))
    if missing_outputs:
        return [
            ContractProblem(spec.name, where, f"outputs {missing_outputs} are not among the inputs")
        ]
    valid = spec.valid_configs(dims, dtype)
    if not valid:
        return [ContractProblem(spec.name, where, "no valid config")]
    grid, args = spec.bind(inputs, dims, valid[0])
    problems = []
    parameters = set(spec.kernel.arg_names)
    if set(args) != parameters:
        detail = []
        if parameters - set(args):
            detail.append(f"missing {sorted(parameters - set(args))}")
        if set(args) - parameters:
            detail.append(f"unknown {sorted(set(args) - parameters)}")
        problems.append(
            ContractProblem(
                spec.name, where, f"bind does not bind every kernel parameter: {', '.join(detail)}"
            )
        )
    if not grid or not all(isinstance(g, int) and g >= 1 for g in grid):
        problems.append(
            ContractProblem(
                spec.name, where, f"bind gives the grid {grid!r}, not positive integers"
            )
        )
    changed = sorted(k for k, v in valid[0].kwargs.items() if args.get(k) != v)
    if changed:
        problems.append(ContractProblem(spec.name, where, f"bind changed the config's {changed}"))
    return problems


def contract_problems(spec: KernelSpec) -> list[ContractProblem]:
    """Every way ``spec`` breaks the contract (empty when it keeps it). Exceptions raised by
    the family's own methods are problems too, named with the method's message."""
    try:
        problems = _knobs(spec)
    except Exception as exc:
        return [ContractProblem(spec.name, "config space", f"{type(exc).__name__}: {exc}")]
    default = spec.default_config()
    for scale in CONTRACT_SCALES:
        shapes = spec.shapes_for(scale)
        if not shapes:
            problems.append(ContractProblem(spec.name, scale, "no shapes"))
        for dims in shapes:
            for dtype in spec.dtypes:
                where = f"{scale} {shape_name(dims)} {dtype}"
                try:
                    reason = spec.invalid_reason(default, dims, dtype)
                    if reason is not None:
                        problems.append(
                            ContractProblem(
                                spec.name, where, f"the default config is invalid: {reason}"
                            )
                        )
                    problems += _binding(spec, dict(dims), dtype, where)
                except Exception as exc:
                    problems.append(
                        ContractProblem(spec.name, where, f"{type(exc).__name__}: {exc}")
                    )
    return problems
