"""Compile recorded configs in a worker process with Triton's compiler selected.

A recording on the interpreter runs in a process where ``@triton.jit`` functions -- Triton's
own standard library (``tl.sum``, ``tl.cdiv``, ...) included -- were made interpretable when
they were defined; such a process cannot compile them for a GPU target. The worker imports
the kernel's module afresh with the interpreter off (by the dotted name the recording process
knows it by, else by file path, see :func:`extract.kernel_loading.import_kernel_module`;
pinned off, so a module that sets ``TRITON_INTERPRET`` itself does not turn it back on) and
compiles there. The module's
top-level code runs in the worker, as it would under any ``spawn`` multiprocessing: a kernel
defined in the script being run is compiled only when that script guards its workload with
``if __name__ == "__main__":`` (:func:`runs_again_on_import`), else the worker would run it.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from corpus.harvest.compile_worker import CompileOutcome
from corpus.record.compiled import compile_config
from corpus.suite.spec import Config
from schemas.enums import Status

FACTORY = "corpus.record.compile_worker:make_handler"


@dataclass(frozen=True)
class RecordCompileInit:
    target: str


@dataclass(frozen=True)
class RecordCompileTask:
    """One config of a recorded call: the kernel by file and name, its arguments (tensors as
    meta tensors of the same shape, strides and dtype), the config."""

    path: str
    entry: str
    args: Mapping[str, Any]
    config: Config
    module: str | None = None
    """The module's dotted name in the recording process (``__spec__.name``), tried first: a
    module of a namespace package or one with relative imports loads by name, not by file."""
    misaligned: Mapping[str, int] = field(default_factory=dict)
    """Bytes past a 16-byte boundary of each tensor argument's data pointer, where not 0: Triton
    specializes a pointer on 16-byte alignment, and a meta tensor crosses the pipe aligned."""


@dataclass(frozen=True)
class JitReference:
    """A ``@triton.jit`` function passed as an argument (a ``tl.constexpr`` activation, say), by
    where it is defined: the object itself does not pickle (its function is not what its module
    binds to the name), and the worker needs its own, compiled rather than interpreted, copy."""

    module: str | None
    """Dotted module name, tried first (None: defined in ``__main__``)."""
    path: str
    name: str

    def resolve(self) -> Any:
        """The worker's object of that name (imported by module name, else by file)."""
        from extract.kernel_loading import import_kernel_module

        if self.module is not None:
            try:
                return getattr(import_kernel_module(self.module), self.name)
            except ImportError:  # not importable by name here (sys.path differs): by file
                pass
        return getattr(import_kernel_module(self.path), self.name)


def _jit_reference(value: Any) -> JitReference | None:
    """A :class:`JitReference` to ``value`` when it is a ``@triton.jit`` function its module
    binds by name, else None."""
    import inspect

    from triton.runtime.jit import KernelInterface

    fn = getattr(value, "fn", None)  # a JITFunction, or the interpreter's InterpretedFunction
    if not isinstance(value, KernelInterface) or not inspect.isfunction(fn):
        return None
    module = sys.modules.get(fn.__module__)
    if getattr(module, fn.__name__, None) is not value:
        return None
    path = inspect.getsourcefile(fn) or ""
    spec = getattr(module, "__spec__", None)
    dotted = spec.name if spec is not None and spec.name != "__main__" else None
    return JitReference(dotted, path, fn.__name__)


def portable_args(args: Mapping[str, Any]) -> dict[str, Any]:
    """The call's arguments with tensors replaced by meta tensors (no data crosses the pipe;
    the compiler reads only dtype and pointer alignment; a meta tensor arrives aligned, so a
    misaligned one travels as :attr:`RecordCompileTask.misaligned` and is rebuilt so), also
    the base tensors of ``TensorDescriptor`` arguments (:func:`corpus.record.replay.shadow`)."""
    from corpus.record.replay import shadow

    return {name: _jit_reference(v) or shadow(v) for name, v in args.items()}


def misalignment(args: Mapping[str, Any]) -> dict[str, int]:
    """:attr:`RecordCompileTask.misaligned` of the call's ``args``."""
    import torch

    return {
        name: value.data_ptr() % 16
        for name, value in args.items()
        if torch.is_tensor(value) and value.device.type != "meta" and value.data_ptr() % 16
    }


def misaligned_like(value: Any, offset: int) -> Any:
    """A meta tensor like ``value`` whose data pointer is ``offset`` bytes past a 16-byte
    boundary (a view into a larger meta tensor; a meta tensor's pointer is its storage offset
    in bytes), so Triton specializes it as it did the workload's tensor."""
    import torch

    itemsize = value.element_size()
    if offset % itemsize:  # not a whole number of elements: no view expresses it
        return value
    extent = 1 + sum((size - 1) * stride for size, stride in zip(value.shape, value.stride()) if size > 0)
    base = torch.empty(offset // itemsize + extent, dtype=value.dtype, device="meta")
    return base.as_strided(tuple(value.shape), tuple(value.stride()), offset // itemsize)


_MAIN_GUARD = re.compile(r"""__name__\s*==\s*['"]__main__['"]""")


def runs_again_on_import(path: str) -> bool:
    """Whether importing the file ``path`` would run this process's workload again: it is the
    script running as ``__main__`` (a user's script, or ``corpus.record``'s workload) and has
    no ``if __name__ == "__main__":`` guard."""
    main_file = getattr(sys.modules.get("__main__"), "__file__", None)
    if not main_file or not os.path.exists(path) or not os.path.samefile(main_file, path):
        return False
    return _MAIN_GUARD.search(Path(path).read_text(errors="replace")) is None


class RecordCompileHandler:
    def __init__(self, init: RecordCompileInit) -> None:
        from triton import knobs

        knobs.runtime.interpret = False  # pinned: kernel modules may set TRITON_INTERPRET=1
        self.init = init
        self.kernels: dict[tuple[str, str], Any] = {}

    def _kernel(self, path: str, entry: str) -> Any:
        """The module's kernel seen through its wrappers (``LoadedKernel``: the JIT function
        and its ``@triton.heuristics``)."""
        from extract.kernel_loading import import_kernel_module, unwrap

        key = (path, entry)
        if key not in self.kernels:
            self.kernels[key] = unwrap(getattr(import_kernel_module(path), entry), entry)
        return self.kernels[key]

    def _load(self, task: RecordCompileTask) -> Any:
        if task.module is not None:
            try:
                return self._kernel(task.module, task.entry)
            except ImportError:  # not importable by name here (sys.path differs): by file
                pass
        return self._kernel(task.path, task.entry)

    def __call__(self, task: RecordCompileTask) -> tuple[CompileOutcome, str | None]:
        try:
            kernel = self._load(task)
        except Exception as exc:
            return CompileOutcome(
                Status.COMPILE_ERROR.value,
                f"cannot load {task.entry} from {task.path}: {exc}"[:400],
            ), None
        args = {
            name: misaligned_like(value, task.misaligned[name]) if name in task.misaligned else value
            for name, value in task.args.items()
        }
        try:
            args = {name: v.resolve() if isinstance(v, JitReference) else v for name, v in args.items()}
        except Exception as exc:
            return CompileOutcome(
                Status.COMPILE_ERROR.value, f"cannot load a @triton.jit argument of {task.entry}: {exc}"[:400]
            ), None
        return compile_config(
            kernel.fn, args, task.config, self.init.target, always_compile=True, heuristics=kernel.heuristics
        )


def make_handler(init: RecordCompileInit) -> RecordCompileHandler:
    """Factory named in ``WorkerProcess(factory=FACTORY)``."""
    return RecordCompileHandler(init)


class WorkerCompiler:
    """A :data:`corpus.record.rows.Compiler` that compiles in one persistent worker process
    (started at construction), killed and respawned when a compile outlives ``timeout_s``. The
    worker does not import ``__main__``: the workload script (``corpus.record``'s, or the one
    that uses the Triton plug-in) never runs there."""

    def __init__(
        self, target: str, environment: Mapping[str, str], timeout_s: float = 120.0
    ) -> None:
        from corpus.harvest.workers import WorkerProcess

        self.timeout_s = timeout_s
        self.worker = WorkerProcess(
            "record-compile", FACTORY, RecordCompileInit(target), environment, import_main=False
        )
        self.worker.start()

    def __call__(
        self, fn: Any, args: Mapping[str, Any], config: Config
    ) -> tuple[CompileOutcome, str | None]:
        import inspect

        from corpus.harvest.workers import WorkerCrashed, WorkerError, WorkerTimeout

        spec = getattr(sys.modules.get(fn.fn.__module__), "__spec__", None)
        task = RecordCompileTask(
            inspect.getsourcefile(fn.fn) or "", fn.fn.__name__, portable_args(args), config,
            module=spec.name if spec is not None and spec.name != "__main__" else None,
            misaligned=misalignment(args),
        )  # fmt: skip
        if runs_again_on_import(task.path):
            return CompileOutcome(
                Status.COMPILE_ERROR.value,
                f"{task.entry} is defined in {task.path}, the script being run, which has no "
                '`if __name__ == "__main__":` guard: the compile worker imports that file and '
                "would run the script again; guard the workload, or move the kernel to a module",
            ), None
        try:
            return self.worker.call(task, self.timeout_s)
        except WorkerTimeout:
            return CompileOutcome(
                Status.COMPILE_TIMEOUT.value,
                f"compile exceeded {self.timeout_s:g} s; worker killed",
            ), None
        except (WorkerCrashed, WorkerError) as exc:
            lines = str(exc).strip().splitlines()
            return CompileOutcome(
                Status.COMPILE_ERROR.value, (lines[-1] if lines else "compile worker failed")[:400]
            ), None

    def close(self) -> None:
        self.worker.close()
