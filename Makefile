# One entry point for setting up, testing and running the demo. Everything installs from this repo's files.
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
DATA := data

.PHONY: setup data lint test demo demo-ci serve bench clean

$(VENV)/.installed: requirements.txt requirements-dev.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements-dev.txt
	touch $@

setup: $(VENV)/.installed

data: setup
	$(PY) -m albert_tf.data_sources --dest $(DATA)

# ruff, pinned in requirements-dev.txt, configured in pyproject.toml.
lint: setup
	$(VENV)/bin/ruff check .

test: setup data lint
	$(PY) -m pytest -q tests

demo: setup data
	$(PY) -m albert_tf.demo --data_dir $(DATA) --output_dir demo_output

demo-ci: setup data
	$(PY) -m albert_tf.demo --data_dir $(DATA) --output_dir demo_output --quick

# Serves the demo's exported classifier (or EXPORT_DIR) over TensorFlow Serving's REST API on PORT.
EXPORT_DIR ?= demo_output/export
PORT ?= 8501
serve: setup
	$(PY) serve.py --export_dir=$(EXPORT_DIR) --model_name=albert --rest_api_port=$(PORT)

bench: setup data
	$(PY) bench/run_all.py

clean:
	rm -rf $(VENV) $(DATA) demo_output .pytest_cache
