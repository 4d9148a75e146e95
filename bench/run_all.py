"""Runs every maintained benchmark in bench/ (`make bench`), one process each, and stops at the
first failure.

Each one measures its speed against a reference run in the same invocation (Hugging Face
PyTorch, the code before, or a baseline) and writes its table and figure to
bench/results/<name>.json through `machine.write_results`; `make docs` then renders the current
figures into bench/RESULTS.md. Two need inputs only you can name, so they are listed, not run.
"""

import os
import subprocess
import sys

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
# Script: the results files it writes (bench/results/<name>.json).
MAINTAINED = {
    "bench_classifier.py": ("classifier_training", "classifier_serving"),
    "bench_dynamic_length.py": ("dynamic_length_avx2", "dynamic_length_avx512"),
    "bench_encoder.py": ("encoder_forward",),
    "bench_pretraining_data.py": ("pretraining_data",),
    "bench_pretraining_step.py": ("pretraining_step",),
    "bench_rest_overhead.py": ("rest_overhead", "rest_request_cost"),  # the second: --reference_repo
    "bench_rest_server.py": ("rest_server",),
    "bench_small_pretraining.py": ("small_pretraining",),
    "bench_tfrecord_check.py": ("tfrecord_check",),
    "keras_fit.py": ("keras_fit",),
}
# Maintained too, but run by hand: script → what it needs.
NEEDS_INPUTS = {
    "bench_export_precision.py": ("export_precision",
                                  "your exports of one fine-tuned model (--float32_export, ...)"),
    "serving_memory.py": ("serving_memory", "--reference_repo, a checkout of the code before"),
}


def main():
    for script in MAINTAINED:
        print(f"\n=== bench/{script}", flush=True)
        result = subprocess.run([sys.executable, os.path.join(BENCH_DIR, script)],
                                cwd=os.path.dirname(BENCH_DIR))
        if result.returncode != 0:
            sys.exit(f"bench/{script} failed with exit code {result.returncode}")
    for script, (_, needs) in NEEDS_INPUTS.items():
        print(f"\n=== bench/{script}: not run, it needs {needs}", flush=True)


if __name__ == "__main__":
    main()
