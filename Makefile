# Two entry points: `make demo` (the main job on its embedded default) and `make test`.
# Each does its own idempotent set-up into .venv.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
TORCH_PIN := torch==2.13.0
# Where that torch comes from. Empty: pip's own indexes, where plain PyPI's Linux x86_64 wheel is
# the CUDA build (NVIDIA's libraries and the Triton it pins come along); PyTorch's CPU index gives
# the CPU build: make setup TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu
TORCH_INDEX_URL ?=
FLAG_GEMS := flag-gems==5.0.2
# Quoted: unquoted, the shell reads each '>=' as a redirection (pip got bare names, and files '=2.0'
# and '=6.0' appeared in the clone).
FLAG_GEMS_IMPORT_DEPS := 'sqlalchemy>=2.0' 'pyyaml>=6.0'

.PHONY: demo test test-compat lint setup clean-demo notebooks strip-notebooks

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	# torch first, so the project's range is already met and pip keeps this build.
	$(BIN)/pip install -q $(TORCH_PIN) $(if $(TORCH_INDEX_URL),--index-url $(TORCH_INDEX_URL))
	$(BIN)/pip install -q -e '.[dev]'
	# flag-gems (extract's tests compile its kernels) pins numpy==1.26.4 and packaging==26.0: never
	# let it downgrade them; only the two dependencies its kernels' import needs come along. They
	# go first: installed after flag-gems, pip would check its pins and report each one we skip on
	# purpose as a conflict; an install with --no-deps checks none.
	$(BIN)/pip install -q $(FLAG_GEMS_IMPORT_DEPS)
	$(BIN)/pip install -q --no-deps $(FLAG_GEMS)
	touch $(STAMP)

setup: $(STAMP)

# Five families so a family split holds out whole families (train 3, validation 1, test 1). It ends
# with what to run next: commands of the README's First ten minutes (tests/test_makefile.py checks).
DEMO_FAMILIES := add_broadcast,softmax,matmul,bias_gelu,cumsum

demo: $(STAMP)
	$(BIN)/python -m corpus.harvest --scale tiny --max-configs 4 --dtypes float32 --families $(DEMO_FAMILIES) --out demo-dataset
	$(BIN)/python -m schemas check demo-dataset
	$(BIN)/python -m train --data demo-dataset --out demo-train --epochs 15 --seeds 3 --split family --threads 1
	@echo
	@echo "next: source .venv/bin/activate, then try"
	@echo "  python -m train.replay --data demo-dataset --model demo-train"
	@echo "  python -m train.predict --checkpoint demo-train/checkpoint --data demo-dataset --top 3"
	@echo "  (README.md, First ten minutes: four more commands on demo-dataset and demo-train)"

test: $(STAMP)
	$(BIN)/python -m pytest

# Extract, record, ingest and end-to-end harvest tests again under the oldest supported Triton (3.6), in a venv of its own.
test-compat:
	bash .ci/extract-triton36.sh

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/python -m schemas doc --check

# Executed HTML of the notebooks in build/notebooks/, on demo-dataset and demo-train (`make demo`
# first when they are missing); NOTEBOOK_DATASET=DIR renders another dataset.
NOTEBOOK_DATASET ?= demo-dataset
NOTEBOOK_RESULTS ?= demo-train

notebooks: $(STAMP)
	@if [ ! -d $(NOTEBOOK_DATASET)/runs ]; then \
		if [ "$(NOTEBOOK_DATASET)" = demo-dataset ]; then $(MAKE) demo; \
		else echo "NOTEBOOK_DATASET=$(NOTEBOOK_DATASET): no dataset there (no runs/)" >&2; exit 1; fi; fi
	mkdir -p build/notebooks
	# A local kernel: IPC sockets, not TCP (and no warning about it), named by an absolute path in a
	# directory of their own: the kernel runs in notebooks/ and nbconvert here, so relative names
	# (Jupyter's default) never meet ("Kernel didn't respond in 60 seconds").
	ipc=$$(mktemp -d) && trap 'rm -rf "$$ipc"' EXIT && \
		KERNEL_CORPUS_DATASET=$(abspath $(NOTEBOOK_DATASET)) KERNEL_CORPUS_RESULTS=$(abspath $(NOTEBOOK_RESULTS)) \
		$(BIN)/python -m nbconvert --to html --execute --output-dir build/notebooks notebooks/*.ipynb \
		--KernelManager.transport=ipc --KernelManager.ip="$$ipc/kernel"

# Notebooks are committed without outputs (a test checks it): run this before committing one.
strip-notebooks: $(STAMP)
	$(BIN)/python -m nbconvert --clear-output --inplace notebooks/*.ipynb \
		--ClearMetadataPreprocessor.enabled=True --ClearMetadataPreprocessor.preserve_cell_metadata_mask=tags \
		--ClearMetadataPreprocessor.preserve_nb_metadata_mask=kernelspec

clean-demo:
	rm -rf demo-dataset demo-train
