"""Runs every benchmark in bench/ (`make bench`), one process each, and stops at the first failure.

Each benchmark prints its own figures, including its speed as a ratio against a reference run
(Hugging Face PyTorch or a baseline) measured in the same invocation; bench/RESULTS.md keeps the
latest figures with the commands that produced them.
"""

import glob
import os
import subprocess
import sys

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))


def main():
    scripts = sorted(glob.glob(os.path.join(BENCH_DIR, "bench_*.py")))
    if not scripts:
        sys.exit(f"no bench_*.py in {BENCH_DIR}")
    for script in scripts:
        print(f"\n=== {os.path.relpath(script)}", flush=True)
        result = subprocess.run([sys.executable, script], cwd=os.path.dirname(BENCH_DIR))
        if result.returncode != 0:
            sys.exit(f"{script} failed with exit code {result.returncode}")


if __name__ == "__main__":
    main()
