#!/usr/bin/env bash
# The reader install a downstream repository gets: `pip install kernel-corpus` (no extras) in a
# fresh virtualenv must bring no torch, Triton or PyTorch Geometric, read a dataset through
# schemas.read_table / scan_table and `python -m schemas check` it, and the heavy commands must
# stop with one line naming their extra.
# Usage: bash .ci/light-reader.sh [DATASET ...]   (default: the committed schema-version-1 fixture)
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
PYTHON="${PYTHON:-python3}"
VENV="$REPO/.venv-light"
DATASETS=("$@")
[ ${#DATASETS[@]} -gt 0 ] || DATASETS=(tests/schemas/fixtures/v1_dataset)

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

# Outside the checkout, so `import schemas` is the installed copy.
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"
for dataset in "${DATASETS[@]}"; do
    case "$dataset" in /*) path=$dataset ;; *) path=$REPO/$dataset ;; esac
    "$VENV/bin/python" - "$path" "$VENV" <<'PY'
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
    "$VENV/bin/python" -m schemas check "$path"
done

# The heavy commands: one line naming the extra, exit 1.
for command in "corpus.harvest --help:harvest" "corpus.suite list:harvest" "extract x.ttgir:extract" "train --help:train"; do
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
