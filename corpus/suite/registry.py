"""Registration and discovery of kernel families.

A suite is any importable module or package: importing it (and, for a package, every
submodule) runs the ``@register`` decorators of the families it defines. The built-in suite
is :data:`BUILTIN_SUITE`; users point the harvest at their own with ``--suite mypkg.kernels``.
"""

from __future__ import annotations

import difflib
import importlib
import pkgutil
from collections.abc import Iterable

from corpus.suite.spec import CATEGORIES, KernelSpec, declaration_problems

BUILTIN_SUITE = "corpus.suite.kernels"

_REGISTRY: dict[str, KernelSpec] = {}


def register(cls: type[KernelSpec]) -> type[KernelSpec]:
    """Class decorator: instantiate the family and add it to the registry."""
    for attr in ("name", "category", "dtypes", "shapes", "outputs"):
        if not hasattr(cls, attr):
            raise TypeError(
                f"kernel family {cls.__qualname__} does not set class attribute {attr!r}"
            )
    if cls.category not in CATEGORIES:
        raise ValueError(
            f"kernel family {cls.name!r}: unknown category {cls.category!r}; expected one of {CATEGORIES}"
        )
    existing = _REGISTRY.get(cls.name)
    if existing is not None and type(existing).__qualname__ != cls.__qualname__:
        raise ValueError(
            f"kernel family name {cls.name!r} registered twice: by {type(existing).__module__} and {cls.__module__}"
        )
    spec = cls()
    problems = declaration_problems(spec)
    if problems:
        raise ValueError(f"kernel family {cls.name!r}: " + "; ".join(problems))
    _REGISTRY[cls.name] = spec
    return cls


def _import_suite_module(module_name: str) -> object:
    """Import one module of a suite; a failure names the module and what it could not import
    (a third-party suite often needs its project installed)."""
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        missing = f" (missing dependency: {exc.name})" if exc.name and exc.name != module_name else ""
        raise ModuleNotFoundError(
            f"suite module {module_name!r} cannot be imported: {exc}{missing}"
        ) from exc
    except ImportError as exc:
        raise ModuleNotFoundError(f"suite module {module_name!r} cannot be imported: {exc}") from exc


def _import_tree(module_name: str) -> list[str]:
    module = _import_suite_module(module_name)
    names = [module.__name__]  # type: ignore[attr-defined]
    if hasattr(module, "__path__"):
        for info in pkgutil.walk_packages(module.__path__, prefix=names[0] + "."):
            _import_suite_module(info.name)
            names.append(info.name)
    return names


def load_suite(modules: str | Iterable[str] = BUILTIN_SUITE) -> dict[str, KernelSpec]:
    """Import the suite module(s) and return their families by name, sorted by name."""
    module_names = [modules] if isinstance(modules, str) else list(modules)
    imported: set[str] = set()
    for name in module_names:
        imported.update(_import_tree(name))
    specs = {n: s for n, s in _REGISTRY.items() if type(s).__module__ in imported}
    return dict(sorted(specs.items()))


class UnknownFamilyError(KeyError):
    """A family name the suite does not have. A ``KeyError`` for callers that catch those, but
    printed as its message (a bare ``KeyError`` prints its argument quoted)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


def unknown_family_message(unknown: Iterable[str], known: Iterable[str]) -> str:
    """One line: each unknown name with its closest known ones, then every known family."""
    known = sorted(known)
    named = []
    for name in unknown:
        close = difflib.get_close_matches(name, known, n=3, cutoff=0.6)
        named.append(f"{name} (did you mean {' or '.join(close)}?)" if close else name)
    return (
        f"unknown kernel famil{'y' if len(named) == 1 else 'ies'} {', '.join(named)}; "
        f"known families: {', '.join(known)}"
    )


def select(specs: dict[str, KernelSpec], names: Iterable[str] | None) -> dict[str, KernelSpec]:
    """Subset of ``specs`` by family name; unknown names raise :class:`UnknownFamilyError`
    with the closest known names and every known one."""
    if not names:
        return specs
    wanted = list(names)
    unknown = [n for n in wanted if n not in specs]
    if unknown:
        raise UnknownFamilyError(unknown_family_message(unknown, specs))
    return {n: specs[n] for n in wanted}
