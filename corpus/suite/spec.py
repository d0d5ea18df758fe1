"""The contract every suite kernel family implements.

A family is one module that defines a :class:`KernelSpec` subclass and decorates it with
:func:`corpus.suite.registry.register`. The harvest only talks to this contract:

- ``bind`` gives the full call of the entry kernel (grid and every argument by name, the
  config's meta-parameters included), so the harvest can both launch it and compile it for
  an explicit target on a machine without a GPU;
- ``make_inputs`` must also work with ``device="meta"`` (no value-dependent Python logic),
  because compile workers build meta tensors only to derive the kernel signature;
- ``reference`` computes the expected value of every name in ``outputs`` from pristine inputs.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from corpus.suite.compare import compare_tensor
from schemas.enums import ROLES, Role
from schemas.identity import config_dict, config_id, launch_string

SCALES: tuple[str, ...] = ("tiny", "small", "default", "large")
"""``tiny`` runs every config in the CPU interpreter in well under a second; ``small`` is a
quick GPU smoke scale; ``default`` is the training-corpus scale; ``large`` stresses big GPUs."""

CATEGORIES: tuple[str, ...] = (
    "pointwise",
    "data_movement",
    "reduction",
    "normalization",
    "loss",
    "scan",
    "matmul",
    "attention",
    "gemv",
    "embedding",
    "test",
)

Dims = Mapping[str, int]
"""Problem dimensions of one shape, e.g. ``{"M": 4096, "N": 4096}``."""


@dataclass(frozen=True)
class Config:
    """One launch configuration: meta-parameters plus Triton's compile options."""

    kwargs: Mapping[str, int] = field(default_factory=dict)
    num_warps: int = 4
    num_stages: int = 2
    num_ctas: int = 1
    maxnreg: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return config_dict(
            self.kwargs, self.num_warps, self.num_stages, self.num_ctas, self.maxnreg
        )

    @property
    def id(self) -> str:
        """``config_id`` of this config (see :mod:`schemas.identity`)."""
        return config_id(self.kwargs, self.num_warps, self.num_stages, self.num_ctas, self.maxnreg)

    @property
    def launch(self) -> str:
        """The ``triton.Config(...)`` expression of this config."""
        return launch_string(
            self.kwargs, self.num_warps, self.num_stages, self.num_ctas, self.maxnreg
        )

    def compile_options(self) -> dict[str, int]:
        """Keyword options Triton takes at launch/compile time."""
        options = {
            "num_warps": self.num_warps,
            "num_stages": self.num_stages,
            "num_ctas": self.num_ctas,
        }
        if self.maxnreg is not None:
            options["maxnreg"] = self.maxnreg
        return options

    def __hash__(self) -> int:
        return hash(self.id)


def shape_name(dims: Dims) -> str:
    """Readable, stable name of a shape: ``M4096_N4096``."""
    return "_".join(f"{k}{v}" for k, v in dims.items())


def product_configs(
    space: Mapping[str, Sequence[int]],
    num_warps: Sequence[int] = (4,),
    num_stages: Sequence[int] = (2,),
) -> list[Config]:
    """Cartesian product of meta-parameter values and compile options, in a stable order."""
    import itertools

    names = list(space)
    configs = []
    for values in itertools.product(*(space[n] for n in names)):
        for warps in num_warps:
            for stages in num_stages:
                configs.append(Config(dict(zip(names, values)), warps, stages))
    return configs


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def next_pow2(n: int) -> int:
    return 1 << max(0, math.ceil(math.log2(max(1, n))))


INTERPRETER_EXCLUDED_DTYPES: tuple[str, ...] = ("bfloat16",)
"""Dtypes Triton's CPU interpreter cannot compute (it computes through NumPy, which has no
bfloat16): the harvest skips them on the interpreter and ``suite check --device cpu`` does too."""


def interpreter_dtypes(spec: KernelSpec) -> list[str]:
    """The family's dtypes the interpreter can run."""
    return [d for d in spec.dtypes if d not in INTERPRETER_EXCLUDED_DTYPES]


DEFAULT_TOLERANCES: Mapping[str, tuple[float, float]] = {
    "float32": (1e-4, 1e-4),
    "float16": (1e-2, 1e-2),
    "bfloat16": (5e-2, 5e-2),
}


DTYPE_BYTES: Mapping[str, int] = {
    "float64": 8,
    "float32": 4,
    "float16": 2,
    "bfloat16": 2,
    "int64": 8,
    "int32": 4,
    "int16": 2,
    "int8": 1,
    "uint8": 1,
    "bool": 1,
}
"""Element size in bytes of the dtypes the suite uses (torch names)."""


def dtype_bytes(dtype: str) -> int:
    """Size of one element of ``dtype`` (a torch dtype name) in bytes."""
    return DTYPE_BYTES[dtype]


def torch_dtype(dtype: str) -> Any:
    """The ``torch.dtype`` named ``dtype`` ('float16' -> ``torch.float16``)."""
    import torch

    value = getattr(torch, dtype, None)
    if not isinstance(value, torch.dtype):
        raise ValueError(f"{dtype!r} is not a torch dtype name")
    return value


def _generator(device: str, seed: int) -> Any:
    import torch

    generator = torch.Generator(device=device)
    generator.manual_seed(seed)
    return generator


def seeded_randn(
    shape: Sequence[int], dtype: str, device: str, seed: int, scale: float = 1.0
) -> Any:
    """Normal(0, scale**2) tensor, reproducible per (device type, seed); on ``device="meta"``
    an uninitialized meta tensor."""
    import torch

    if str(device) == "meta":
        return torch.empty(tuple(shape), dtype=torch_dtype(dtype), device="meta")
    values = torch.randn(
        tuple(shape), generator=_generator(device, seed), device=device, dtype=torch.float32
    )
    return (values * scale).to(torch_dtype(dtype))


def seeded_uniform(
    shape: Sequence[int], dtype: str, device: str, seed: int, low: float = 0.0, high: float = 1.0
) -> Any:
    """Uniform[low, high) tensor, reproducible per (device type, seed); meta-safe."""
    import torch

    if str(device) == "meta":
        return torch.empty(tuple(shape), dtype=torch_dtype(dtype), device="meta")
    values = torch.rand(
        tuple(shape), generator=_generator(device, seed), device=device, dtype=torch.float32
    )
    return (low + (high - low) * values).to(torch_dtype(dtype))


def seeded_randint(
    shape: Sequence[int], high: int, device: str, seed: int, dtype: str = "int64"
) -> Any:
    """Integers uniform in [0, high), reproducible per (device type, seed); meta-safe."""
    import torch

    if str(device) == "meta":
        return torch.empty(tuple(shape), dtype=torch_dtype(dtype), device="meta")
    return torch.randint(
        0,
        high,
        tuple(shape),
        generator=_generator(device, seed),
        device=device,
        dtype=torch_dtype(dtype),
    )


def output_buffer(shape: Sequence[int], dtype: str, device: str) -> Any:
    """An output tensor pre-filled with NaN (floating dtypes) or -1 (integer dtypes), so an
    element the kernel fails to write cannot match the reference by luck; meta-safe."""
    import torch

    out = torch.empty(tuple(shape), dtype=torch_dtype(dtype), device=device)
    if str(device) != "meta":
        out.fill_(float("nan") if out.is_floating_point() else -1)
    return out


def per_thread_reason(elements: int, num_warps: int, low: int = 1, high: int = 128) -> str | None:
    """Reason a block of ``elements`` is a poor fit for ``num_warps`` warps (fewer than
    ``low`` or more than ``high`` elements per thread), or None when it fits."""
    threads = 32 * num_warps
    if elements < low * threads:
        return f"block of {elements} elements leaves threads idle with num_warps={num_warps} ({threads} threads)"
    if elements > high * threads:
        return f"block of {elements} elements is over {high} per thread with num_warps={num_warps}"
    return None


class KernelSpec(ABC):
    """One kernel family of the suite. Subclass, fill the class attributes, implement the
    abstract methods, and decorate with ``@register``."""

    name: ClassVar[str]
    """Family name, unique in a suite (``snake_case``)."""
    category: ClassVar[str]
    """One of :data:`CATEGORIES`."""
    dtypes: ClassVar[tuple[str, ...]]
    """Supported main dtypes as torch names: 'float16', 'bfloat16', 'float32', ..."""
    shapes: ClassVar[Mapping[str, Sequence[Dims]]]
    """Shapes per scale (keys from :data:`SCALES`)."""
    outputs: ClassVar[tuple[str, ...]]
    """Names of arguments the kernel writes; each is checked against ``reference``."""
    mutated: ClassVar[tuple[str, ...]] = ()
    """Input arguments the kernel modifies in place (also in ``outputs``): the harvest
    snapshots them once and restores them before every launch, outside the timed region."""
    roles: ClassVar[Mapping[str, str]] = {}
    """Role of each meta-parameter across families (values of :class:`schemas.enums.Role`), so
    a model can line up BLOCK_N of one family with BLOCK_V of another. Unlisted ones are
    ``other``. The roles:

    - ``tile_m``: rows of the output tile one program computes (rows, tokens, queries);
    - ``tile_n``: columns of that tile, and the whole block of a one-dimensional kernel;
    - ``tile_k``: step of the contraction loop feeding a multiply-accumulate (K of a matmul
      or GEMV, the keys of attention);
    - ``reduction_block``: chunk of any other reduction or scan a program loops over (the
      row chunk of softmax, norms, argmax, cumsum; the row chunk of a column sum);
    - ``split``: programs that share one reduction (split-K);
    - ``programs``: number of programs, set by the knob itself (persistent kernels);
    - ``group``: programs grouped along M when the program order is swizzled for L2 reuse;
    - ``rows_per_program``: rows one program handles one after another;
    - ``other``: no counterpart in other families."""
    flag_dims: ClassVar[tuple[str, ...]] = ()
    """Names in a shape's dims that are mode switches (TRANS_B, RESIDUAL, ...), not sizes:
    each must be in every shape's dims. Everything else in the dims is a size."""

    @property
    @abstractmethod
    def kernel(self) -> Any:
        """The ``@triton.jit`` entry function that is tuned."""

    @abstractmethod
    def config_space(self) -> list[Config]:
        """Every config a tuner would try (the full space, before validity filtering)."""

    @abstractmethod
    def default_config(self) -> Config:
        """The config a user would pick without tuning; must be in ``config_space()`` and
        valid on every ``tiny`` and ``default`` shape (the tests check both): it is each
        run's baseline."""

    @abstractmethod
    def make_inputs(self, dims: Dims, dtype: str, device: str, seed: int) -> dict[str, Any]:
        """Seeded inputs and output buffers by argument name (tensors and runtime scalars).
        Must also work on ``device="meta"``."""

    @abstractmethod
    def bind(
        self, inputs: Mapping[str, Any], dims: Dims, config: Config
    ) -> tuple[tuple[int, ...], dict[str, Any]]:
        """The launch grid and every argument of ``kernel`` by name, meta-parameters included."""

    @abstractmethod
    def reference(self, inputs: Mapping[str, Any], dims: Dims) -> dict[str, Any]:
        """Expected values of every name in ``outputs``, from pristine inputs (torch ops)."""

    @abstractmethod
    def flops(self, dims: Dims) -> int:
        """Floating-point operations of one launch."""

    @abstractmethod
    def bytes_moved(self, dims: Dims, dtype: str) -> int:
        """Minimum bytes one launch must read from and write to DRAM."""

    def invalid_reason(self, config: Config, dims: Dims, dtype: str) -> str | None:
        """Why ``config`` cannot run on this shape/dtype, or None when it is valid."""
        return None

    def tolerance(self, dtype: str) -> tuple[float, float]:
        """(atol, rtol) for comparing outputs against ``reference``."""
        return DEFAULT_TOLERANCES.get(dtype, (1e-5, 1e-5))

    def output_tolerance(self, output: str, dtype: str) -> tuple[float, float]:
        """(atol, rtol) for one output (e.g. an int8 tensor that may differ by one rounding
        step). Default: :meth:`tolerance` of the family's dtype."""
        return self.tolerance(dtype)

    def mismatches(
        self, actual: Mapping[str, Any], expected: Mapping[str, Any], dtype: str
    ) -> dict[str, str]:
        """Compare every name in ``outputs``: ``{name: why}`` for each output that does not
        match ``expected`` within :meth:`output_tolerance` (empty when all match). Compared on
        the output's device in bounded chunks by :func:`corpus.suite.compare.compare_tensor`
        (float64, NaNs equal, shapes exactly; NaNs where the reference has none are counted as
        never written)."""
        problems: dict[str, str] = {}
        for name in self.outputs:
            atol, rtol = self.output_tolerance(name, dtype)
            comparison = compare_tensor(name, actual[name], expected[name], atol, rtol)
            if not comparison.ok:
                problems[name] = comparison.describe()
        return problems

    def prepare(self, inputs: Mapping[str, Any]) -> None:
        """Work that belongs to every launch and is timed with it (e.g. zeroing an atomic
        accumulator). Default: nothing."""
        return None

    def launch(self, inputs: Mapping[str, Any], dims: Dims, config: Config) -> Any:
        """Run the kernel once with ``config``; returns what Triton's launch returns."""
        grid, args = self.bind(inputs, dims, config)
        self.prepare(inputs)
        return self.kernel[grid](**args, **config.compile_options())

    def bound_launch(self, inputs: Mapping[str, Any], dims: Dims, config: Config) -> Callable[[], Any]:
        """:meth:`launch` with the arguments bound once: the returned callable does only
        :meth:`prepare` and ``kernel[grid](**args)``, so a timed region holds no binding work.
        A spec that overrides :meth:`launch` (e.g. to add a second kernel) is timed through its
        own ``launch``, unchanged."""
        if type(self).launch is not KernelSpec.launch:
            return lambda: self.launch(inputs, dims, config)
        grid, args = self.bind(inputs, dims, config)
        arguments = {**args, **config.compile_options()}
        kernel, prepare = self.kernel[grid], self.prepare

        def launch() -> Any:
            prepare(inputs)
            return kernel(**arguments)

        return launch

    def role_of(self, name: str) -> str:
        """Role of meta-parameter ``name`` as its text (``other`` when the family does not say)."""
        role = self.roles.get(name, Role.OTHER.value)
        if role not in ROLES:
            raise ValueError(
                f"{self.name}: meta-parameter {name!r} has unknown role {role!r}; known: {', '.join(ROLES)}"
            )
        return Role(role).value

    def problem_sizes(self, dims: Dims) -> dict[str, int]:
        """The dims that are sizes (everything but :attr:`flag_dims`)."""
        return {k: int(v) for k, v in dims.items() if k not in self.flag_dims}

    def problem_flags(self, dims: Dims) -> dict[str, int]:
        """The dims that are mode switches (:attr:`flag_dims`)."""
        return {k: int(v) for k, v in dims.items() if k in self.flag_dims}

    def valid_configs(self, dims: Dims, dtype: str) -> list[Config]:
        return [c for c in self.config_space() if self.invalid_reason(c, dims, dtype) is None]

    def shapes_for(self, scale: str) -> list[Dims]:
        if scale not in SCALES:
            raise ValueError(f"unknown scale {scale!r}; expected one of {', '.join(SCALES)}")
        return list(self.shapes.get(scale, ()))


def declaration_problems(spec: KernelSpec) -> list[str]:
    """What is wrong with the role and flag declarations of ``spec`` (empty when nothing):
    roles outside :class:`schemas.enums.Role`, roles of names that are not constexpr
    parameters of the kernel, flag dims missing from a shape. Cheap: no config space, no
    tensors, so :func:`corpus.suite.registry.register` runs it on every family."""
    problems = [
        f"meta-parameter {name!r} has unknown role {role!r} (known: {', '.join(ROLES)})"
        for name, role in spec.roles.items()
        if role not in ROLES
    ]
    params = getattr(spec.kernel, "params", None) if spec.roles else None
    if params is not None:
        constexprs = {p.name for p in params if getattr(p, "is_constexpr", False)}
        problems += [
            f"roles names {name!r}, which is not a constexpr parameter of the kernel"
            for name in spec.roles
            if name not in constexprs
        ]
    if isinstance(spec.flag_dims, str):
        problems.append(f"flag_dims must be a tuple of names, not the string {spec.flag_dims!r}")
    else:
        for scale, shapes in spec.shapes.items():
            for dims in shapes:
                missing = [flag for flag in spec.flag_dims if flag not in dims]
                if missing:
                    problems.append(
                        f"flag dim(s) {', '.join(missing)} missing from {scale} shape {shape_name(dims)}"
                    )
    return problems
