#!/usr/bin/env bash
# The reader install a downstream repository gets: `pip install PATH-OR-GIT-URL` (no extras) in a
# fresh virtualenv must bring no torch, Triton or PyTorch Geometric, read a dataset through
# schemas.read_table / scan_table and `python -m schemas check` it, and the heavy commands must
# stop with one line naming their extra. The same reading runs again with the oldest versions
# of the dependencies that pyproject.toml allows.
# Usage: bash .ci/light-reader.sh [DATASET ...]   (default: the committed schema-version-1 fixture)
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
PYTHON="${PYTHON:-python3}"
VENV="$REPO/.venv-light"
DATASETS=("$@")
[ ${#DATASETS[@]} -gt 0 ] || DATASETS=(tests/schemas/fixtures/v1_dataset)

# Outside the checkout, so `import schemas` is the installed copy.
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

# read_with VENV: read and check every dataset with the kernel-corpus installed in VENV.
read_with() {
    local venv=$1 dataset path
    (
    cd "$WORK"
    for dataset in "${DATASETS[@]}"; do
        case "$dataset" in /*) path=$dataset ;; *) path=$REPO/$dataset ;; esac
        "$venv/bin/python" - "$path" "$venv" <<'PY'
import sys
import schemas
from schemas import read_table, scan_table
root, venv = sys.argv[1:]
assert schemas.__file__.startswith(venv), f"schemas imported from {schemas.__file__}, not the install"
measurements = read_table(root, "measurements", columns=["run_id", "config_id", "status", "median_ms"])
runs = scan_table(root, "runs").select("run_id", "family").collect()
assert measurements.num_rows > 0 and runs.height > 0, (measurements.num_rows, runs.height)
heavy = sorted(m for m in ("torch", "triton", "torch_geometric") if m in sys.modules)
assert not heavy, heavy
print(f"{root}: {measurements.num_rows} measurements, {runs.height} runs via {schemas.__file__}")
PY
        "$venv/bin/python" -m schemas check "$path"
    done
    )
}

rm -rf "$VENV"
"$PYTHON" -m venv "$VENV"
"$VENV/bin/pip" install -q --upgrade pip
"$VENV/bin/pip" install -q "$REPO"   # not editable: the installed package, as downstream gets it
rm -rf "$REPO/build/lib" "$REPO"/build/bdist.*   # setuptools' in-tree scratch of that install
"$VENV/bin/pip" list
if "$VENV/bin/pip" list --format freeze | grep -iE '^(torch|triton|torch[-_]geometric|nvidia-.*)=='; then
    echo "light install pulled a heavy package (above)" >&2
    exit 1
fi
read_with "$VENV"

# The oldest dependencies pyproject allows (each `name>=X` as `name==X`): a consumer's
# environment that already holds them keeps them, so they must read and check a dataset too
# (polars 1.0 took no open files in scan_parquet; pyarrow 16.0 misread nullable
# byte-stream-split columns).
FLOOR="$REPO/.venv-light-floor"
mapfile -t FLOORS < <(sed -n '/^dependencies = \[/,/^\]/p' "$REPO/pyproject.toml" \
    | grep -o '"[A-Za-z0-9_.-]*>=[^",;]*"' | tr -d '"' | sed 's/>=/==/')
[ ${#FLOORS[@]} -gt 0 ] || { echo "no 'name>=X' dependencies found in pyproject.toml" >&2; exit 1; }
rm -rf "$FLOOR"
"$PYTHON" -m venv "$FLOOR"
"$FLOOR/bin/pip" install -q --upgrade pip
"$FLOOR/bin/pip" install -q "${FLOORS[@]}"
"$FLOOR/bin/pip" install -q --no-deps "$REPO"
rm -rf "$REPO/build/lib" "$REPO"/build/bdist.*
"$FLOOR/bin/pip" check
echo "oldest allowed dependencies: ${FLOORS[*]}"
read_with "$FLOOR"
rm -rf "$FLOOR"

cd "$WORK"
# The heavy commands: one line naming the extra, exit 1.
for command in "corpus.harvest --help:harvest" "corpus.suite list:harvest" "extract x.ttgir:extract" "train --help:train" \
    "schemas.bench --rows 10:bench"; do
    args=${command%%:*}
    extra=${command##*:}
    set +e
    "$VENV/bin/python" -m $args >"$WORK/out" 2>"$WORK/err"
    status=$?
    set -e
    if [ "$status" -ne 1 ] || [ -s "$WORK/out" ] || [ "$(wc -l <"$WORK/err")" -ne 1 ] \
        || ! grep -q "pip install 'kernel-corpus\[$extra\]'" "$WORK/err"; then
        echo "python -m $args: expected one line naming the [$extra] extra and exit 1, got $status:" >&2
        cat "$WORK/out" "$WORK/err" >&2
        exit 1
    fi
    echo "python -m $args -> $(cat "$WORK/err")"
done
echo "light reader install: OK"
