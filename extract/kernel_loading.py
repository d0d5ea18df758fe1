"""Find a third-party ``@triton.jit`` kernel by name and see through its decorators.

``KERNEL`` is addressed as ``path/to/file.py:NAME`` or ``package.module:NAME``. A file that
lives inside a package (its directory has ``__init__.py``) is imported under its dotted
package name, so package-relative imports (``from .utils import ...``) work as they do in the
project it came from. ``@triton.autotune`` and ``@triton.heuristics`` wrappers are unwrapped
to the jitted function; their configs and heuristics are kept for the caller. Any other
wrapper that holds the wrapped kernel as ``.fn`` (flag-gems' ``@libentry()``, ...) is seen
through too, and named in ``LoadedKernel.wrappers``.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from triton.runtime import Autotuner, Heuristics, JITFunction

__all__ = [
    "KernelLoadError",
    "LoadedKernel",
    "import_kernel_module",
    "kernel_names",
    "load_kernel",
    "names_a_file",
    "unwrap",
]


class KernelLoadError(ValueError):
    """The named object is missing or is not a Triton kernel; the message names it."""


@dataclass(frozen=True)
class LoadedKernel:
    """A jitted function and what its decorators said about it.

    ``configs`` are the ``triton.Config`` objects of an enclosing ``@triton.autotune`` (empty
    when there is none); ``heuristics`` maps meta-parameter names to the functions of every
    enclosing ``@triton.heuristics``, outermost first (each takes the dict of all arguments).
    """

    fn: Any
    name: str
    configs: tuple[Any, ...] = ()
    heuristics: tuple[tuple[str, Callable[[dict[str, Any]], Any]], ...] = ()
    wrappers: tuple[str, ...] = ()
    """Type names of the wrappers seen through, outermost first (e.g. LibEntry, Heuristics)."""


def unwrap(obj: Any, name: str = "kernel") -> LoadedKernel:
    """See through wrappers (in any order and depth) to the ``JITFunction``: ``Autotuner`` and
    ``Heuristics``, whose configs and heuristics are kept, and any other object that holds the
    wrapped kernel as ``.fn``. Refuse anything that is not a Triton kernel."""
    configs: tuple[Any, ...] = ()
    heuristics: list[tuple[str, Callable[[dict[str, Any]], Any]]] = []
    wrappers: list[str] = []
    current, seen = obj, set()
    while not isinstance(current, JITFunction):
        if id(current) in seen or not hasattr(current, "fn"):
            raise KernelLoadError(
                f"{name} is a {type(current).__name__}, not a @triton.jit function (nor a wrapper "
                "of one: @triton.autotune, @triton.heuristics, or any object holding it as .fn)"
                + (f"; seen through: {' -> '.join(wrappers)}" if wrappers else "")
            )
        seen.add(id(current))
        wrappers.append(type(current).__name__)
        if isinstance(current, Autotuner):
            configs = configs or tuple(current.configs)
        elif isinstance(current, Heuristics):
            heuristics.extend(current.values.items())
        current = current.fn
    return LoadedKernel(
        fn=current, name=name, configs=configs, heuristics=tuple(heuristics), wrappers=tuple(wrappers)
    )


def load_kernel(spec: str) -> LoadedKernel:
    """Import ``FILE.py:NAME`` or ``package.module:NAME`` and unwrap the kernel ``NAME``."""
    location, _, name = spec.rpartition(":")
    if not location or not name:
        raise ValueError(f"expected FILE.py:KERNEL or package.module:KERNEL, got {spec!r}")
    module = import_kernel_module(location)
    try:
        obj = getattr(module, name)
    except AttributeError:
        raise KernelLoadError(f"{location} defines no {name!r}; {_kernels_line(module)}") from None
    try:
        return unwrap(obj, name)
    except KernelLoadError as exc:
        # A helper or a class named by mistake: say which names would have worked.
        raise KernelLoadError(f"{exc}; {_kernels_line(module)}") from None


def kernel_names(module: Any) -> list[str]:
    """Sorted names of the module's Triton kernels: ``@triton.jit`` functions and wrappers that
    ``unwrap`` sees through (imported ones too: ``FILE.py:NAME`` can name them as well)."""
    names = []
    for attr, value in vars(module).items():
        # Submodules are never kernels, and a lazy one would import itself on attribute access.
        if isinstance(value, ModuleType):
            continue
        try:
            unwrap(value, attr)
        except Exception:  # any object: a property or __getattr__ may raise anything
            continue
        names.append(attr)
    return sorted(names)


def _kernels_line(module: Any) -> str:
    names = kernel_names(module)
    return f"its kernels: {', '.join(names)}" if names else "it defines no Triton kernel"


def names_a_file(location: str) -> bool:
    """Whether the ``location`` of ``LOCATION:NAME`` is a file path (else a dotted module name)."""
    return (
        location.endswith(".py") or "/" in location or "\\" in location or Path(location).is_file()
    )


def import_kernel_module(location: str) -> Any:
    """The module at ``location``: a Python file path or an importable dotted module name."""
    if not names_a_file(location):
        try:
            return importlib.import_module(location)
        except ModuleNotFoundError as exc:
            raise ModuleNotFoundError(
                f"cannot import module {location!r}: {exc} (give FILE.py:KERNEL for a file, or put "
                "the module's package on PYTHONPATH)"
            ) from exc
    path = Path(location).resolve()
    if not path.is_file():
        raise FileNotFoundError(f"no such kernel file: {path}")
    package_root, dotted = _package_name(path)
    if dotted is not None:
        with _on_sys_path(package_root):
            return importlib.import_module(dotted)
    return _import_file(path)


def _package_name(path: Path) -> tuple[Path, str | None]:
    """(directory to put on sys.path, dotted module name) for a file inside a package; the
    dotted name is None for a loose file."""
    parts = [path.stem]
    directory = path.parent
    while (directory / "__init__.py").is_file():
        parts.insert(0, directory.name)
        directory = directory.parent
    return directory, ".".join(parts) if len(parts) > 1 else None


def _import_file(path: Path) -> Any:
    module_name = f"_extract_kernel_{path.stem}"
    module_spec = importlib.util.spec_from_file_location(module_name, path)
    if module_spec is None or module_spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[module_name] = module  # Triton reads the defining module of a jitted function
    with _on_sys_path(path.parent):  # sibling imports of a loose file
        module_spec.loader.exec_module(module)
    return module


@contextmanager
def _on_sys_path(directory: Path) -> Iterator[None]:
    entry = str(directory)
    sys.path.insert(0, entry)
    try:
        yield
    finally:
        sys.path.remove(entry)
