"""Every use of Triton's private Python API lives here, and only here.

Triton's JIT internals (argument specialization) and its MLIR bindings
(``triton._C.libtriton.ir``) are not a stable API: methods appear and disappear between
releases (3.6 has no ``operation.get_int_attr``, ``value.get_shape`` or
``location.get_name``; 3.9 does). This module uses only what 3.6 through 3.9 all offer:

- JIT: ``create_function_from_signature(signature, params, backend)`` and
  ``JITFunction._pack_args(...)`` -- the very code a GPU launch runs to specialize arguments.
- MLIR: ``ir.parse_mlir_module`` (parse + verify), ``module.walk``, and per operation
  ``get_name / get_num_operands / get_operand / get_num_results / get_result /
  get_num_regions / get_region / get_block``, ``block.get_parent / get_num_arguments /
  get_argument / id``, ``region.id``, ``value.id / get_type``, ``str(type)``.

- Hooks (``knobs.compilation.listener``, ``knobs.autotuning.listener``, launch hooks): every
  hook we install goes through :func:`chained_hook`, so a hook installed before ours (a
  user's, tritonparse's) keeps seeing every event and is back in place afterwards.

Everything the bindings do not expose uniformly (attributes, locations) is read from the
printed IR text by :mod:`extract.irtext`. The rest of the package sees plain Python data
(:class:`RawOp`), never a binding object.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource, make_backend

TRITON_VERSION: str = triton.__version__


# --------------------------------------------------------------------------------------
# Compilation: specialization exactly as the JIT does it, for an explicit target
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Specialization:
    """What ``JITFunction.run`` hands to ``triton.compile`` for one call."""

    signature: dict[str, str]
    constexprs: dict[tuple[int, ...], Any]
    attrs: dict[tuple[int, ...], Any]
    options: dict[str, Any]


def _jit_launch_kwargs(fn: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
    """Add the option kwargs that ``JITFunction.run`` injects before specializing.

    They feed the option hash of the cache key, so they must match a real launch.
    """
    from triton import knobs

    launch = dict(kwargs)
    launch["debug"] = launch.get("debug", getattr(fn, "debug", None)) or knobs.runtime.debug
    launch["instrumentation_mode"] = knobs.compilation.instrumentation_mode
    if hasattr(knobs.compilation, "fpsan_homomorphic_casts"):  # added after 3.6
        launch["fpsan_homomorphic_casts"] = knobs.compilation.fpsan_homomorphic_casts
    return launch


FP_FUSION_DEFAULT_WARNING = "TRITON_DEFAULT_FP_FUSION is unset"
"""Start of the UserWarning Triton 3.9 gives, once per process, the first time it parses
compile options without ``TRITON_DEFAULT_FP_FUSION`` set (fusion stays on; 3.10 turns it off).
The options parsed in :func:`specialize` are ours, not a launch of the user's, so the warning
is not theirs to act on; the toolchain fingerprint records the Triton version that decides."""


def specialize(fn: Any, args: Mapping[str, Any], target: GPUTarget, options: Mapping[str, Any]) -> Specialization:
    """Specialize ``fn`` for ``args`` the way the JIT would on a device of ``target``."""
    from triton.runtime.jit import create_function_from_signature

    backend = make_backend(target)
    binder = create_function_from_signature(fn.signature, fn.params, backend)
    kwargs = _jit_launch_kwargs(fn, {**args, **options})
    bound_args, specialization, leftover = binder(**kwargs)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=FP_FUSION_DEFAULT_WARNING, category=UserWarning)
        parsed_options, signature, constexprs, attrs = fn._pack_args(backend, kwargs, bound_args, specialization, leftover)
    return Specialization(signature, constexprs, attrs, dict(parsed_options.__dict__))


@dataclass(frozen=True)
class CompiledVariant:
    """A compiled kernel reduced to plain data."""

    asm: dict[str, str | bytes]
    metadata: dict[str, Any]
    compile_time_s: float
    cache_hit: bool


@contextlib.contextmanager
def _listening(always_compile: bool) -> Iterator[dict[str, Any]]:
    """Temporarily add a compilation listener (both 3.6 and 3.9 call it) to learn whether
    ``triton.compile`` was served from the on-disk cache. A listener installed before (a
    user's, tritonparse's) still sees the compile, and is back in place afterwards."""
    from triton import knobs

    seen: dict[str, Any] = {}

    def listener(*, cache_hit: bool, **_: Any) -> None:
        seen["cache_hit"] = cache_hit

    with _KNOB_LOCK, compilation_listener(listener), _knob_restored(knobs.compilation, "always_compile"):
        knobs.compilation.always_compile = always_compile or knobs.compilation.always_compile
        yield seen


@contextlib.contextmanager
def _knob_restored(group: Any, name: str) -> Iterator[None]:
    """Put Triton knob ``group.name`` back as it was: its override and its environment
    variable. Setting a knob writes its variable (``TRITON_ALWAYS_COMPILE=0``), and assigning
    the old value back would leave it set where it was unset: the process, its children and a
    later harvest's toolchain fingerprint would see an environment the user never set."""
    descriptor = type(group).__dict__.get(name)
    key = getattr(descriptor, "key", None)
    saved_env = os.environ.get(key) if key else None
    overridden = name in vars(group)
    saved_override = vars(group).get(name)
    try:
        yield
    finally:
        if overridden:
            vars(group)[name] = saved_override
        else:
            vars(group).pop(name, None)
        if key:
            if saved_env is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = saved_env


_KNOB_LOCK = threading.Lock()


def compile_ast(
    fn: Any, spec: Specialization, target: GPUTarget, *, always_compile: bool = False
) -> CompiledVariant:
    """Run ``triton.compile`` on ``fn`` as specialized; exceptions propagate unchanged."""
    source = ASTSource(fn, spec.signature, spec.constexprs, spec.attrs)
    with _listening(always_compile) as seen:
        start = time.perf_counter()
        kernel = triton.compile(source, target=target, options=dict(spec.options))
        elapsed = time.perf_counter() - start
    return CompiledVariant(
        asm=compiled_asm(kernel),
        metadata=compiled_metadata(kernel),
        compile_time_s=elapsed,
        cache_hit=bool(seen.get("cache_hit", False)),
    )


def compiled_asm(kernel: Any) -> dict[str, str | bytes]:
    """The IR texts and binary of a ``CompiledKernel`` as a plain dict."""
    return {key: kernel.asm[key] for key in kernel.asm if key != "source"}


def compiled_metadata(kernel: Any) -> dict[str, Any]:
    """The metadata of a ``CompiledKernel`` as a plain dict (``target`` as 'cuda:90')."""
    raw = kernel.metadata
    meta = dict(raw._asdict()) if hasattr(raw, "_asdict") else dict(vars(raw))
    target = meta.get("target")
    if isinstance(target, GPUTarget) or (hasattr(target, "backend") and hasattr(target, "arch")):
        meta["target"] = f"{target.backend}:{target.arch}"
    elif isinstance(target, (list, tuple)) and len(target) >= 2:
        meta["target"] = f"{target[0]}:{target[1]}"
    return meta


def def_line_number(fn: Any) -> int:
    """File line of the ``def`` of a ``@triton.jit`` function (``fn.src`` starts there).

    Triton 3.9 stores it as ``def_file_line_number``; 3.6 only has the first line of the
    decorated source (``starting_line_number``), decorators included."""
    line = getattr(fn, "def_file_line_number", None)
    if line is not None:
        return int(line)
    for offset, text in enumerate(fn.raw_src):
        if text.lstrip().startswith("def "):
            return fn.starting_line_number + offset
    return fn.starting_line_number


def is_compiled_kernel(obj: Any) -> bool:
    """True for Triton's ``CompiledKernel`` (duck-typed: ``asm`` and ``metadata``)."""
    return hasattr(obj, "asm") and hasattr(obj, "metadata") and hasattr(obj, "hash")


# --------------------------------------------------------------------------------------
# Hooks: ours run beside whatever is installed, and leave it installed
# --------------------------------------------------------------------------------------


class _ChainedHook:
    """Calls our hook, then the one installed before it (its return value wins: a JIT hook
    that skips a compile keeps doing so). Once ``active`` is False only the previous one is
    called, for the case where someone installed a hook on top of ours meanwhile and keeps
    calling us."""

    def __init__(self, ours: Callable[..., Any], previous: Callable[..., Any] | None) -> None:
        self.ours = ours
        self.previous = previous
        self.active = True

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        result = None
        try:
            if self.active:
                result = self.ours(*args, **kwargs)
        finally:
            # the previous hook sees every event, even one whose handling failed in ours
            if self.previous is not None:
                result = self.previous(*args, **kwargs)
        return result


@contextlib.contextmanager
def chained_hook(owner: Any, name: str, hook: Callable[..., Any]) -> Iterator[None]:
    """Install ``hook`` as ``owner.<name>`` (a Triton knob such as
    ``knobs.compilation.listener``) for the duration of the ``with`` block, chained to the
    hook installed before, which is put back afterwards.

    Triton's ``HookChain`` knobs (launch hooks in 3.9) get ``hook`` added and removed; plain
    slots get a wrapper calling ``hook`` and then the previous hook. If another tool
    replaced our wrapper meanwhile, its hook stays installed (ours then only forwards).
    """
    current = getattr(owner, name)
    if hasattr(current, "add") and hasattr(current, "remove") and hasattr(current, "calls"):
        entry = _ChainedHook(hook, None)  # a fresh object: HookChain.add ignores duplicates
        current.add(entry)
        try:
            yield
        finally:
            current.remove(entry)
        return
    chained = _ChainedHook(hook, current)
    setattr(owner, name, chained)
    try:
        yield
    finally:
        chained.active = False
        if getattr(owner, name) is chained:
            setattr(owner, name, current)


def compilation_listener(hook: Callable[..., None]) -> contextlib.AbstractContextManager[None]:
    """``hook(src=, metadata=, metadata_group=, times=, cache_hit=)`` is called after every
    ``triton.compile`` in the block, beside any listener already installed."""
    from triton import knobs

    return chained_hook(knobs.compilation, "listener", hook)


def autotuning_listener(hook: Callable[..., None]) -> contextlib.AbstractContextManager[None]:
    """``hook(fn=, key=, best_config=, configs_timings=, duration=, cache_hit=)`` is called
    after every autotuning in the block, beside any listener already installed. Raises
    ``NotImplementedError`` on Triton versions without ``knobs.autotuning.listener``."""
    from triton import knobs

    autotuning = getattr(knobs, "autotuning", None)
    if autotuning is None or not hasattr(autotuning, "listener"):
        raise NotImplementedError(f"Triton {TRITON_VERSION} has no knobs.autotuning.listener")
    return chained_hook(autotuning, "listener", hook)


@contextlib.contextmanager
def launch_hooks(
    enter: Callable[..., None] | None = None, exit: Callable[..., None] | None = None
) -> Iterator[None]:
    """``enter(metadata)`` / ``exit(metadata)`` around every kernel launch in the block,
    beside any launch hooks already installed."""
    from triton import knobs

    with contextlib.ExitStack() as stack:
        if enter is not None:
            stack.enter_context(chained_hook(knobs.runtime, "launch_enter_hook", enter))
        if exit is not None:
            stack.enter_context(chained_hook(knobs.runtime, "launch_exit_hook", exit))
        yield


# --------------------------------------------------------------------------------------
# MLIR: parse and verify a module, walk it into plain records
# --------------------------------------------------------------------------------------


@dataclass
class RawOp:
    """One operation as the bindings see it. Values and blocks are identified by integer
    ids that are unique within one parsed module."""

    name: str
    operands: list[int]
    results: list[int]
    result_types: list[str]
    block: int
    regions: list[int]


@dataclass
class RawBlock:
    """A block: its parent region and its arguments (value ids, type texts, and location
    texts such as ``loc("acc"("k.py":12:5))``)."""

    region: int
    args: list[int]
    arg_types: list[str]
    arg_locs: list[str]


@dataclass
class RawModule:
    """A parsed module: operations in walk order, blocks by id, and the module's own body
    block id (top-level operations live there)."""

    ops: list[RawOp]
    blocks: dict[int, RawBlock]
    top_block: int


class MlirParseError(ValueError):
    """Triton's parser or verifier rejected the IR text. ``line`` and ``column`` are 1-based
    when known; the message is MLIR's diagnostic without its location prefix."""

    def __init__(self, message: str, line: int | None, column: int | None = None) -> None:
        super().__init__(message)
        self.line = line
        self.column = column


_context_cache = threading.local()


_PARSES_PER_CONTEXT = 2000
"""A context interns every type, attribute and location it ever parsed; a fresh one now and
then keeps a long harvest's memory flat."""

_BACKEND_PROBE_TARGETS = (GPUTarget("cuda", 90, 32), GPUTarget("hip", "gfx942", 64))


def _context() -> Any:
    """An MLIR context for this thread with Triton's and the backends' dialects loaded."""
    context = getattr(_context_cache, "context", None)
    uses = getattr(_context_cache, "uses", 0)
    if context is None or uses >= _PARSES_PER_CONTEXT:
        from triton._C.libtriton import ir

        context = ir.context()
        ir.load_dialects(context)
        for target in _BACKEND_PROBE_TARGETS:  # backend dialects (ttng, amdgpu, ...) when installed
            with contextlib.suppress(Exception):
                make_backend(target).load_dialects(context)
        _context_cache.context = context
        uses = 0
    _context_cache.uses = uses + 1
    return context


def _diagnostic_error(detail: str, path: str) -> MlirParseError:
    """An MLIR diagnostic ``loc("PATH":LINE:COL): error: ...`` as :class:`MlirParseError`."""
    import re

    match = re.search(r'(?:loc\()?"?' + re.escape(path) + r'"?:(\d+):(\d+)\)?:?\s*', detail)
    if match is None:
        return MlirParseError(detail.replace(path, "<ir>").strip(), None)
    message = (detail[: match.start()] + detail[match.end() :]).replace(path, "<ir>").strip()
    return MlirParseError(message, int(match.group(1)), int(match.group(2)))


class _Scratch:
    """Per-thread scratch files, made once: the IR file handed to the parser (it parses
    files only) and a file that captures descriptor 2, where MLIR prints diagnostics."""

    def __init__(self) -> None:
        self.directory = tempfile.mkdtemp(prefix="extract-mlir-")
        self.ir_path = os.path.join(self.directory, "module.mlir")
        self.stderr_file = open(os.path.join(self.directory, "stderr.txt"), "w+b")  # noqa: SIM115
        atexit.register(self.close)

    def close(self) -> None:
        self.stderr_file.close()
        shutil.rmtree(self.directory, ignore_errors=True)


def _scratch() -> _Scratch:
    scratch = getattr(_context_cache, "scratch", None)
    if scratch is None:
        scratch = _context_cache.scratch = _Scratch()
    return scratch


def _parse(text: str, context: Any) -> tuple[Any, str]:
    """Parse and verify ``text`` with Triton's own parser; raise :class:`MlirParseError`.

    Returns the module and the scratch path it was parsed from (MLIR invents locations in
    that file for operations whose text has none)."""
    from triton._C.libtriton import ir

    scratch = _scratch()
    path = scratch.ir_path
    # A fresh file each time: truncating and rewriting the last one costs ext4 3-4 ms of
    # block freeing and flushing (measured on a 100 KB module), a sixth of an extraction.
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    with open(path, "w") as handle:
        handle.write(text)
    capture = scratch.stderr_file
    capture.seek(0)
    capture.truncate()
    sys.stderr.flush()
    saved = os.dup(2)
    os.dup2(capture.fileno(), 2)
    module = None
    failure = ""
    try:
        module = ir.parse_mlir_module(path, context)
    except Exception as exc:
        failure = str(exc)
    finally:
        os.dup2(saved, 2)
        os.close(saved)
    if module is None:
        capture.seek(0)
        detail = capture.read().decode(errors="replace")
        raise _diagnostic_error(detail or failure or "parse failed", path)
    return module, path


@dataclass
class ParsedModule:
    """A verified module walked into plain records. ``reprint()`` returns Triton's own
    printing of it (with locations); ``path`` is the temporary file it was parsed from."""

    module: RawModule
    path: str
    _handle: Any
    _context: Any  # the module must not outlive its MLIR context

    def reprint(self) -> str:
        return self._handle.str()


def parse_module(text: str) -> ParsedModule:
    """Parse, verify and walk ``text`` (MLIR text of a Triton module)."""
    context = _context()
    handle, path = _parse(text, context)
    return ParsedModule(module=_walk(handle), path=path, _handle=handle, _context=context)


def _walk(module: Any) -> RawModule:
    ops: list[RawOp] = []
    blocks: dict[int, RawBlock] = {}
    module_op_block: list[int] = []
    append = ops.append

    # One call per binding method where a loop is not needed: this runs once per operation
    # (a third of a 1k-op extraction), and most operations have one result and no region.
    def visit(op: Any) -> None:
        name = op.get_name()
        count = op.get_num_regions()
        regions = [op.get_region(i).id() for i in range(count)] if count else []
        if name == "builtin.module":
            module_op_block.extend(regions)
            return
        block = op.get_block()
        block_id = block.id()
        if block_id not in blocks:
            n_args = block.get_num_arguments()
            args = [block.get_argument(i) for i in range(n_args)]
            blocks[block_id] = RawBlock(
                region=block.get_parent().id(),
                args=[a.id() for a in args],
                arg_types=[str(a.get_type()) for a in args],
                arg_locs=[str(a.get_loc()) for a in args],
            )
        count = op.get_num_results()
        if count == 1:
            result = op.get_result(0)
            results, result_types = [result.id()], [str(result.get_type())]
        else:
            values = [op.get_result(i) for i in range(count)]
            results, result_types = [r.id() for r in values], [str(r.get_type()) for r in values]
        count = op.get_num_operands()
        operands = [op.get_operand(i).id() for i in range(count)] if count else []
        append(RawOp(name, operands, results, result_types, block_id, regions))

    module.walk(visit)
    top_region = module_op_block[-1] if module_op_block else -1
    top_blocks = [bid for bid, b in blocks.items() if b.region == top_region]
    return RawModule(ops=ops, blocks=blocks, top_block=top_blocks[0] if top_blocks else -1)


# --------------------------------------------------------------------------------------
# Toolchain identity
# --------------------------------------------------------------------------------------


def compiler_key() -> str:
    """Triton's own hash of its frontend, compiler and backend sources (part of its cache
    key): two installs with equal keys generate the same code. Moved between 3.6 and 3.9."""
    try:
        from triton.runtime.cache import triton_key
    except ImportError:  # Triton 3.6 keeps it next to the compiler
        from triton.compiler.compiler import triton_key
    return triton_key()


# --------------------------------------------------------------------------------------
# CUDA tools shipped in the wheel
# --------------------------------------------------------------------------------------


def nvidia_tool_path(name: str) -> str | None:
    """Path of a CUDA tool (``cuobjdump``, ``nvdisasm``, ``ptxas``) as Triton resolves it
    (``TRITON_<NAME>_PATH`` or the copy inside the wheel); None when absent."""
    try:
        from triton import knobs

        tool = getattr(knobs.nvidia, name)
        path = tool.path
    except Exception:
        path = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", name)
    return path if path and os.path.isfile(path) and os.access(path, os.X_OK) else None
