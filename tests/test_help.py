"""Every command's ``--help``: each option explained, with its default when it takes a value;
no raw reStructuredText (double backquotes, ``:func:`` roles) in any help text.

Each command's module is run as ``__main__`` with ``--help`` while ``ArgumentParser.parse_args``
is intercepted, so the parser inspected is the one the command really builds; subcommands are
walked from it."""

from __future__ import annotations

import argparse
import os
import re
import runpy
import sys

import pytest

COMMANDS = [
    ("corpus.harvest", []),
    ("corpus.suite", []),
    ("corpus.bench", []),
    ("corpus.record", []),
    ("corpus.record.bench", []),
    ("corpus.ingest", []),
    ("schemas", []),
    ("schemas.bench", []),
    ("extract", []),
    ("extract", ["compile"]),
    ("extract.bench", []),
    ("corpus.guide.bench", []),
    ("train", []),
    ("train.predict", []),
    ("train.bench", []),
    ("train.baselines", []),
    ("train.compare", []),
    ("train.replay", []),
]

RST = re.compile(r"``|:(func|class|mod|meth|attr|data|exc|obj|ref|doc):`")
VALUELESS = (
    argparse._StoreTrueAction,
    argparse._StoreFalseAction,
    argparse._StoreConstAction,
    argparse._CountAction,
    argparse._HelpAction,
    argparse._VersionAction,
    argparse._SubParsersAction,
)


class Captured(Exception):
    def __init__(self, parser: argparse.ArgumentParser) -> None:
        self.parser = parser


def parser_of(module: str, argv: list[str], monkeypatch) -> argparse.ArgumentParser:
    """The parser ``python -m module *argv --help`` builds."""

    def capture(self, args=None, namespace=None):
        raise Captured(self)

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", capture)
    monkeypatch.setattr(argparse.ArgumentParser, "parse_known_args", capture)
    monkeypatch.setattr(sys, "argv", [module, *argv, "--help"])
    environment = dict(os.environ)
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=False)
    except Captured as captured:
        return captured.parser
    finally:
        os.environ.clear()
        os.environ.update(environment)
    raise AssertionError(f"python -m {module} built no parser")


def walk(parser: argparse.ArgumentParser, name: str):
    """(name, parser) of the parser and every subcommand's, depth first."""
    yield name, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub_name, sub in action.choices.items():
                yield from walk(sub, f"{name} {sub_name}")


def problems_of(parser: argparse.ArgumentParser, name: str) -> list[str]:
    found = []
    text = parser.format_help()
    if RST.search(text):
        found.append(f"{name}: reStructuredText in the help: {RST.search(text).group(0)!r}")
    for action in parser._actions:
        if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
            continue
        flag = "/".join(action.option_strings) or action.dest
        if not action.help or action.help == argparse.SUPPRESS:
            found.append(f"{name} {flag}: no help")
            continue
        rendered = action.help % {**vars(action), "prog": parser.prog} if "%" in action.help else action.help
        takes_value = action.option_strings and not isinstance(action, VALUELESS) and not action.required
        if takes_value and "default" not in rendered.lower():
            found.append(f"{name} {flag}: help does not say its default ({action.default!r})")
    return found


@pytest.mark.parametrize(("module", "argv"), COMMANDS, ids=[" ".join([m, *a]) for m, a in COMMANDS])
def test_help_explains_every_option_and_its_default(module, argv, monkeypatch):
    parser = parser_of(module, argv, monkeypatch)
    problems = [p for name, sub in walk(parser, " ".join([module, *argv])) for p in problems_of(sub, name)]
    assert not problems, "\n".join(problems)


def test_the_replays_description_names_every_strategy(monkeypatch):
    # the description lists what --strategies takes, each with what it is: hedged and budget,
    # added after it was written, were missing from it
    from train.replay.strategies import KNOWN

    description = parser_of("train.replay", [], monkeypatch).description
    missing = [name for name in KNOWN if not re.search(rf"(^|[ (;-]){re.escape(name)}[ ;,)]", description)]
    assert not missing, missing
