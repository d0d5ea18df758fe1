"""``python -m corpus.suite``: list the suite, show one family, or check configs against the
torch reference.

    python -m corpus.suite list [--scale default] [--suite MODULE ...]
    python -m corpus.suite show NAME [--suite MODULE ...]
    python -m corpus.suite check [NAME ...] [--scale tiny] [--samples 3] [--all] [--device cpu]
    python -m corpus.suite doc [--path docs/suite.md]

``check`` on ``--device cpu`` runs Triton's interpreter, selected here before any kernel
module is imported.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console

from corpus.suite.registry import BUILTIN_SUITE, load_suite, select
from corpus.suite.spec import SCALES, interpreter_dtypes
from corpus.terminal import plural, print_trimmed
from schemas.argtypes import non_empty_csv, non_empty_path, non_negative_int
from schemas.console import fill_markup, print_error
from schemas.helptext import plain


@dataclass(frozen=True)
class ListCommand:
    suites: tuple[str, ...]
    scale: str


@dataclass(frozen=True)
class ShowCommand:
    suites: tuple[str, ...]
    name: str


@dataclass(frozen=True)
class DocCommand:
    suites: tuple[str, ...]
    path: Path
    scale: str


@dataclass(frozen=True)
class CheckCommand:
    suites: tuple[str, ...]
    names: tuple[str, ...]
    scale: str
    device: str
    samples: int
    seed: int
    every_config: bool
    json_path: Path | None


class SuiteCommandError(RuntimeError):
    """The command cannot do what was asked (a missing document, a --json path no file can be
    written at, no GPU for --device cuda); the message names the argument at fault."""


def _device(text: str) -> str:
    """``--device``: cpu (the interpreter), cuda or cuda:N."""
    value = text.strip()
    if value in ("cpu", "cuda") or (value.startswith("cuda:") and value[5:].isdigit()):
        return value
    raise argparse.ArgumentTypeError(f"expected cpu, cuda or cuda:N, got {text!r}")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m corpus.suite", description=plain(__doc__.split("\n\n")[0])
    )
    commands = parser.add_subparsers(dest="command", required=True)

    def add_suite(sub: argparse.ArgumentParser) -> None:
        sub.add_argument(
            "--suite",
            action="extend",  # repeated or comma-separated, as the harvest's --suite
            type=non_empty_csv,
            metavar="MODULE",
            help=f"suite module(s) or package(s) to load, comma-separated or repeated (default: {BUILTIN_SUITE})",
        )

    listing = commands.add_parser("list", help="table of families with config/shape/run counts")
    add_suite(listing)
    listing.add_argument(
        "--scale", choices=SCALES, default="default", help="scale the run counts refer to (default: default)"
    )

    show = commands.add_parser("show", help="one family: config space, default config, shapes")
    add_suite(show)
    show.add_argument("name", help="family name")

    doc = commands.add_parser("doc", help="rewrite the families table of the suite document")
    add_suite(doc)
    doc.add_argument(
        "--path", type=non_empty_path, default=Path("docs/suite.md"), help="document with the table markers (default: docs/suite.md)"
    )
    doc.add_argument("--scale", choices=SCALES, default="default", help="scale of the table's run counts (default: default)")

    check = commands.add_parser(
        "check", help="run configs once and compare with the torch reference"
    )
    add_suite(check)
    check.add_argument("names", nargs="*", help="families to check (default: all)")
    check.add_argument("--scale", choices=SCALES, default="tiny", help="shape set to check (default: tiny, sized for the interpreter)")
    check.add_argument(
        "--device",
        type=_device,
        default="cpu",
        help="cpu: Triton's interpreter (float32/float16 only), or cuda (default: cpu)",
    )
    check.add_argument(
        "--samples",
        type=non_negative_int,
        default=3,
        help="valid configs sampled per family besides the default (default: 3)",
    )
    check.add_argument("--seed", type=non_negative_int, default=0, help="seed of the config sample and the inputs (default: 0)")
    check.add_argument(
        "--all", dest="every_config", action="store_true", help="check every valid config"
    )
    check.add_argument(
        "--json", dest="json_path", type=non_empty_path, help="also write the results as JSON to this file (default: none)"
    )
    return parser


def _suites(values: Sequence[str] | None) -> tuple[str, ...]:
    return tuple(values) if values else (BUILTIN_SUITE,)


def run_list(command: ListCommand, console: Console) -> None:
    from corpus.suite.report import print_list

    print_list(console, load_suite(command.suites), command.scale)


def run_show(command: ShowCommand, console: Console) -> None:
    from corpus.suite.report import print_family

    spec = select(load_suite(command.suites), [command.name])[command.name]
    print_family(console, spec)


def run_doc(command: DocCommand, console: Console) -> None:
    from corpus.suite.report import families_markdown, replace_families_table

    try:
        document = command.path.read_text()
    except OSError as exc:
        raise SuiteCommandError(f"--path {command.path}: {exc.strerror or exc}") from None
    table = families_markdown(load_suite(command.suites), command.scale)
    try:
        updated = replace_families_table(document, table)
    except ValueError as exc:  # a document without the markers: not the suite document
        raise SuiteCommandError(f"--path {command.path}: {exc}") from None
    command.path.write_text(updated)
    console.print(f"wrote the families table of {command.path}", markup=False)


def _check_json_path(path: Path | None) -> None:
    """Refuse a ``--json`` file that cannot be written before the check runs: the results
    would otherwise be lost to a traceback after every config ran."""
    if path is None:
        return
    if path.is_dir():
        raise SuiteCommandError(f"--json {path}: a directory; give the path of a file")
    parent = path.parent
    if not parent.is_dir():
        raise SuiteCommandError(f"--json {path}: no directory {parent} to write it in")


def _check_cuda(device: str) -> None:
    """Refuse ``--device cuda`` (or ``cuda:N``) on a machine without that GPU before any
    config runs: each would otherwise fail with torch's long CUDA error."""
    if device == "cpu":
        return
    import torch

    if not torch.cuda.is_available():
        raise SuiteCommandError(f"--device {device}: CUDA is not available here; use --device cpu (the interpreter)")
    index = int(device.removeprefix("cuda:")) if device.startswith("cuda:") else 0
    if index >= torch.cuda.device_count():
        raise SuiteCommandError(f"--device {device}: no GPU {index} (this machine has {torch.cuda.device_count()})")


def run_check(command: CheckCommand, console: Console) -> bool:
    _check_json_path(command.json_path)
    _check_cuda(command.device)
    previous = os.environ.get("TRITON_INTERPRET")
    if command.device == "cpu":
        # Must precede the first import of a kernel module: @triton.jit reads it then.
        os.environ["TRITON_INTERPRET"] = "1"
    try:
        return _check(command, console)
    finally:  # a caller in the same process (tests) must not inherit the interpreter
        if previous is None:
            os.environ.pop("TRITON_INTERPRET", None)
        else:
            os.environ["TRITON_INTERPRET"] = previous


def _check(command: CheckCommand, console: Console) -> bool:
    from corpus.suite.check import check_suite
    from corpus.suite.report import check_table

    specs = select(load_suite(command.suites), command.names)
    compiled = [
        name for name, spec in specs.items() if type(spec.kernel).__name__ != "InterpretedFunction"
    ]
    if command.device == "cpu" and compiled:
        raise RuntimeError(
            f"kernels of {', '.join(compiled)} were imported before the interpreter was selected; "
            "run the check in a fresh process (or set TRITON_INTERPRET=1 before importing them)"
        )
    broken = _contract(specs, console)
    dtypes = None
    if command.device == "cpu":  # the harvest's rule: everything the interpreter can compute
        dtypes = sorted({d for spec in specs.values() for d in interpreter_dtypes(spec)})
    results = check_suite(
        specs,
        command.scale,
        command.device,
        dtypes,
        command.samples,
        command.seed,
        command.every_config,
    )
    print_trimmed(console, check_table(results, command.every_config))
    for r in results:
        if not r.ok:  # one line per failure, however long: a log is grepped for them
            console.print(
                fill_markup(
                    "[red]FAIL[/] {family} {shape} {dtype} {config}: {error}",
                    family=r.family,
                    shape=r.shape,
                    dtype=r.dtype,
                    config=r.config,
                    error=r.error,
                ),
                highlight=False,
                soft_wrap=True,
            )
    failed = sum(not r.ok for r in results)
    others = (
        "every other config wherever it is valid"
        if command.every_config
        else f"{plural(command.samples, 'other config')} per family, each on a sampled shape x dtype"
    )
    console.print(
        f"{len(results)} checked in {plural(len(specs), 'family', 'families')}: "
        f"{len(results) - failed} passed, {failed} failed (the default config on every "
        f"{command.scale} shape x dtype, plus {others})"
    )
    if command.json_path is not None:
        command.json_path.write_text(json.dumps([r.as_dict() for r in results], indent=1))
    return failed == 0 and not broken


def _contract(specs: dict, console: Console) -> int:
    """Print every contract problem of the selected families (any suite); their count."""
    from corpus.suite.contract import contract_problems

    problems = [problem for spec in specs.values() for problem in contract_problems(spec)]
    for problem in problems:
        console.print(fill_markup("[red]CONTRACT[/] {problem}", problem=problem), highlight=False, soft_wrap=True)  # one line each
    if problems:
        console.print(f"{len(problems)} contract problem(s) (see 'The KernelSpec contract' in docs/suite.md)")
    return len(problems)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    console = Console()  # the terminal's width; COLUMNS, or 80, when piped
    suites = _suites(args.suite)
    try:
        if args.command == "list":
            run_list(ListCommand(suites, args.scale), console)
        elif args.command == "show":
            run_show(ShowCommand(suites, args.name), console)
        elif args.command == "doc":
            run_doc(DocCommand(suites, args.path, args.scale), console)
        else:
            command = CheckCommand(
                suites,
                tuple(args.names),
                args.scale,
                args.device,
                args.samples,
                args.seed,
                args.every_config,
                args.json_path,
            )
            return 0 if run_check(command, console) else 1
    except (KeyError, ModuleNotFoundError, RuntimeError) as exc:
        print_error(console, str(exc.args[0] if exc.args else exc))
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
