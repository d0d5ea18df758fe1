#!/usr/bin/env bash
# The extract, harvest, train and Ray tests, and ruff, with the oldest dependencies pyproject.toml
# allows: every `name>=X` of the base dependencies, of the extract, harvest, train and ray extras
# and of dev's own tools (pytest, pytest-timeout, ruff, pyyaml) installed as `name==X` (the highest
# floor where a package is listed twice: polars 1.17), in a virtualenv of its own created from
# scratch. A floor set too low breaks a user who has exactly that release (polars 1.17 lacks
# list.agg; matplotlib 3.7 lacks Figure.get_suptitle; ruff 0.6 knows no RUF043).
# Not here (not verified at their floors): the notebooks, trace and thirdparty extras.
# torch and triton are not at their floors: torch is the CPU 2.13.0 the main venv uses (another
# one pulls gigabytes of CUDA wheels); the oldest Triton is `make test-compat`'s job.
# Usage: bash .ci/extras-floor.sh [PYTEST ARGS...]   (default: the tests below)
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
PYTHON="${PYTHON:-python3}"
VENV="$REPO/.venv-floor"

# name==floor for every floor above; python3.11+ reads the TOML.
mapfile -t FLOORS < <("$PYTHON" - "$REPO/pyproject.toml" <<'PY'
import re
import sys
import tomllib

with open(sys.argv[1], "rb") as file:
    project = tomllib.load(file)["project"]
requirements = list(project["dependencies"])
for extra in ("extract", "harvest", "train", "ray", "dev"):
    requirements += project["optional-dependencies"][extra]
floors: dict[str, str] = {}
for requirement in requirements:
    found = re.fullmatch(r"([A-Za-z0-9_.-]+)(\[[A-Za-z0-9_,.-]+\])?>=([0-9][^,;\s]*)", requirement)
    if requirement.startswith("kernel-corpus"):
        continue  # the extras name each other
    if found is None:
        sys.exit(f"pyproject.toml: {requirement!r} is not 'name>=X'; this script pins only those")
    name, version = found[1].lower() + (found[2] or ""), found[3]  # ray[client]==2.9
    if found[1] in ("torch", "triton"):
        continue
    current = floors.get(name)
    key = lambda text: tuple(int(part) for part in re.findall(r"\d+", text))  # noqa: E731
    if current is None or key(version) > key(current):
        floors[name] = version
for name, version in sorted(floors.items()):
    print(f"{name}=={version}")
PY
)
[ ${#FLOORS[@]} -gt 0 ] || { echo "no floors read from pyproject.toml" >&2; exit 1; }

rm -rf "$VENV"
"$PYTHON" -m venv "$VENV"
"$VENV/bin/pip" install -q --upgrade pip
# torch first, so nothing replaces it: a CPU build where pip finds one (a local wheel here;
# TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu elsewhere, as for make setup).
"$VENV/bin/pip" install -q torch==2.13.0 ${TORCH_INDEX_URL:+--index-url "$TORCH_INDEX_URL"}
# Binary wheels only: an sdist of an old release would build against today's toolchain, which is
# not what a user with that release has.
"$VENV/bin/pip" install -q --only-binary :all: "${FLOORS[@]}" triton
# The project as make setup installs it (editable): the tests' harvests run `python -m corpus.*`.
"$VENV/bin/pip" install -q --no-deps -e "$REPO"
"$VENV/bin/pip" check
echo "oldest allowed dependencies: ${FLOORS[*]}"
"$VENV/bin/pip" list --format freeze | grep -iE '^(torch|triton)=='

"$VENV/bin/ruff" check .

TESTS=("$@")
[ ${#TESTS[@]} -gt 0 ] || TESTS=(tests/extract tests/train tests/corpus/harvest/test_harvest.py
    tests/corpus/harvest/test_resume.py tests/corpus/harvest/test_cluster.py tests/corpus/guide)
"$VENV/bin/python" -m pytest "${TESTS[@]}" -p no:cacheprovider
