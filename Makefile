# One entry point for setting up, testing and running the demo. Everything installs from this repo's files.
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
DATA := data

.PHONY: setup data lint test test-hf5 demo demo-ci serve bench clean

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
	$(MAKE) test-hf5

# The Hugging Face bridge tests again, against transformers 5: .venv-hf5 is .venv (a .pth file
# puts its packages on the path) with requirements-hf5.txt installed over it.
VENV_HF5 := .venv-hf5
$(VENV_HF5)/.installed: $(VENV)/.installed requirements-hf5.txt
	rm -rf $(VENV_HF5)
	$$(readlink -f $(PY)) -m venv $(VENV_HF5)
	$(VENV_HF5)/bin/python -c "import site, sys; open(site.getsitepackages()[0] + '/main_venv.pth', 'w').write(sys.argv[1])" "$$($(PY) -c 'import site; print(site.getsitepackages()[0])')"
	$(VENV_HF5)/bin/python -m pip install --quiet -r requirements-hf5.txt
	touch $@

test-hf5: $(VENV_HF5)/.installed data
	$(VENV_HF5)/bin/python -c "import transformers as t; assert t.__version__.startswith('5.'), t.__version__"
	$(VENV_HF5)/bin/python -m pytest -q tests/test_hf_format.py tests/test_hf_parity.py tests/test_hf_tokenizer_json.py

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
	rm -rf $(VENV) $(VENV_HF5) $(DATA) demo_output .pytest_cache
