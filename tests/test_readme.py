"""The README's first hour, as written: every bash and python block of README.md runs, from a
fresh directory holding what ``make demo`` makes (``demo-dataset``, ``demo-train``) and the
clone's ``tests/`` and ``docs/``, unless the line before the block says why it is not run
(``<!-- not run: needs a GPU -->``: a GPU, a cluster, the network, an install, or minutes of
work that other tests cover). Each block runs on its own copy of the demo files, so it uses
their names or creates what it uses, and leaves nothing behind for the next one."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
RUN_LANGUAGES = ("bash", "sh", "python")
FENCE = re.compile(
    r"^(?P<indent>[ \t]*)```(?P<language>[\w-]*)[^\n]*\n(?P<code>.*?)^(?P=indent)```[ \t]*$", re.M | re.S
)
NOT_RUN = re.compile(r"^<!-- not run: (?P<why>.+?) -->$")
CLONE_ENTRIES = ("tests", "docs")
"""What snippets use of the clone beside the installed packages (fixture files, the schema
reference): linked into each snippet's directory."""


@dataclass(frozen=True)
class Snippet:
    line: int
    """Line of the opening fence in README.md (1-based)."""
    language: str
    code: str
    not_run: str | None
    """Why the block is not run, from the marker on the line before it; None: it runs."""

    @property
    def name(self) -> str:
        first = next((line.strip() for line in self.code.splitlines() if line.strip()), "")
        return f"README.md:{self.line} {first[:50]}"


def snippets(text: str) -> list[Snippet]:
    """The bash/sh/python blocks of ``text``, in order."""
    found = []
    lines = text.splitlines()
    for match in FENCE.finditer(text):
        if match.group("language") not in RUN_LANGUAGES:
            continue
        line = text.count("\n", 0, match.start()) + 1
        before = next((lines[i].strip() for i in range(line - 2, -1, -1) if lines[i].strip()), "")
        marker = NOT_RUN.match(before)
        code = textwrap.dedent(match.group("code"))  # a block inside a list item is indented
        found.append(Snippet(line, match.group("language"), code, marker and marker.group("why")))
    return found


SNIPPETS = snippets(README.read_text())
RUNNABLE = [s for s in SNIPPETS if s.not_run is None]


def test_markers_sit_right_before_a_block():
    lines = README.read_text().splitlines()
    for number, line in enumerate(lines):
        if NOT_RUN.match(line.strip()):
            following = next((later for later in lines[number + 1 :] if later.strip()), "")
            assert following.startswith("```"), f"README.md:{number + 1}: a not-run marker with no block after it"
    assert RUNNABLE, "no README block runs"


def test_python_blocks_parse():
    for snippet in SNIPPETS:
        if snippet.language == "python":
            compile(snippet.code, snippet.name, "exec")


@pytest.fixture
def snippet_dir(tmp_path: Path, demo_dataset: Path, demo_train: Path) -> Path:
    """A directory like the clone's root after ``make demo``: copies of demo-dataset and
    demo-train, links to the clone's tests/ and docs/."""
    shutil.copytree(demo_dataset, tmp_path / "demo-dataset", symlinks=False)
    shutil.copytree(demo_train, tmp_path / "demo-train", symlinks=False)
    for entry in CLONE_ENTRIES:
        (tmp_path / entry).symlink_to(REPO / entry, target_is_directory=True)
    return tmp_path


@pytest.mark.parametrize("snippet", RUNNABLE, ids=lambda s: s.name)
def test_readme_block_runs_as_written(snippet: Snippet, snippet_dir: Path):
    env = {
        **os.environ,
        # `python` is this interpreter, as after `source .venv/bin/activate`
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
        "KERNEL_CORPUS_TRAIN_CACHE": str(snippet_dir / ".train-cache"),
        "COLUMNS": "100",
    }
    if snippet.language == "python":
        script = snippet_dir / f"readme_{snippet.line}.py"
        script.write_text(snippet.code)
        command = [sys.executable, script.name]
    else:
        command = ["bash", "-e", "-o", "pipefail", "-c", snippet.code]
    done = subprocess.run(command, cwd=snippet_dir, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{snippet.name} failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"


OUTPUT = re.compile(r"""--out[ =]['"]?(?P<flag>[^\s'"]+)|\bout="(?P<kwarg>[^"]+)"|helion_log (?P<logs>\S+)""")
"""Where a README command writes: ``--out DIR``, ``corpus.record(out="DIR")``, the Helion log
generator's directory."""


def readme_outputs(text: str) -> set[str]:
    """The clone-relative paths the README's commands (in any block, run or not) write to; URLs
    and absolute paths are elsewhere."""
    names = set()
    for block in FENCE.finditer(text):
        for match in OUTPUT.finditer(block.group("code")):
            name = next(group for group in match.groups() if group).rstrip("/")
            if name and ":" not in name and not name.startswith(("/", "$")):
                names.add(name)
    return names


@pytest.mark.skipif(shutil.which("git") is None or not (REPO / ".git").exists(), reason="needs a git clone")
def test_what_readme_commands_write_is_gitignored():
    # A newcomer runs these in the clone: each output must stay out of `git status` (and out of
    # a commit made with `git add .`)
    names = readme_outputs(README.read_text())
    assert {"my-dataset", "my-train", "scale", "guided-auto", "helion-logs"} <= names  # the scan finds them
    tracked = []
    for name in sorted(names):
        # as the directory's contents: a pattern with a trailing slash matches only what git can
        # see is a directory, and most of these do not exist in a fresh clone
        paths = [name, f"{name}/part-0.parquet"]
        done = subprocess.run(["git", "check-ignore", "--no-index", *paths], cwd=REPO, capture_output=True)
        if done.returncode != 0:
            tracked.append(name)
    assert not tracked, f"README commands write these into the clone, not in .gitignore: {tracked}"


def layout_block(text: str) -> str:
    """The code block under Development's ``### Layout``: one entry per top-level directory."""
    section = text.split("### Layout", 2)[2]  # the first is The dataset's
    return section.split("```", 2)[1]


def test_the_layout_names_only_what_the_clone_has():
    # "where does X live" is answered from this block: a renamed or moved directory or module
    # must not leave it pointing at nothing
    missing, top = [], None
    for line in layout_block(README.read_text()).splitlines()[1:]:
        head = re.match(r"^([a-z_]+)/ ", line)
        if head:
            top = REPO / head.group(1)
            missing += [] if top.is_dir() else [str(top)]
            line = line[head.end():]
        assert top is not None, line
        for sub in re.findall(r"\b([a-z_]+)/", line):  # a subpackage of this entry's package
            if not (top / sub).is_dir():
                missing.append(f"{top.name}/{sub}/")
        for module in re.findall(r"\b([a-z_]+\.py)\b", line):  # a module somewhere under it
            if not any(top.rglob(module)):
                missing.append(f"{top.name}/.../{module}")
    assert not missing, f"README's Layout names what the clone lacks: {missing}"
    assert "scheduler" in layout_block(README.read_text())  # the block found is the one meant


def heading_anchors(text: str) -> set[str]:
    """The anchors GitHub gives ``text``'s headings: lower case, punctuation but ``-`` and ``_``
    dropped, spaces as ``-``, a repeated one suffixed ``-1``, ``-2``..."""
    anchors: set[str] = set()
    seen: dict[str, int] = {}
    for heading in re.findall(r"^#{1,6} (.+)$", FENCE.sub("", text), re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        anchors.add(f"{slug}-{seen[slug]}" if slug in seen else slug)
        seen[slug] = seen.get(slug, 0) + 1
    return anchors


@pytest.mark.parametrize("page", ["README.md", *sorted(f"docs/{p.name}" for p in (REPO / "docs").glob("*.md"))])
def test_relative_links_reach_their_file_and_heading(page: str):
    # the README sends a newcomer to docs/ sections by anchor; a renamed heading broke none
    # loudly before
    source = REPO / page
    text = re.sub(r"`[^`\n]*`", "", FENCE.sub("", source.read_text()))  # links only, not code
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):  # https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        destination = (source.parent / path) if path else source
        if not destination.exists():
            broken.append(f"{target} (no such file)")
        elif anchor and destination.suffix == ".md" and anchor not in heading_anchors(destination.read_text()):
            broken.append(f"{target} (no such heading)")
    assert not broken, f"{page}: {broken}"
