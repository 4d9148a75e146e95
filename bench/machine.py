"""What machine a benchmark ran on: every figure in RESULTS.md names its CPU model, since these
machines differ (some have AMX, some are AMD without it)."""

import os
import platform


def cpu_model():
    """The CPU's model name from /proc/cpuinfo (platform's guess elsewhere)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as reader:
            for line in reader:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def describe():
    return f"CPU: {cpu_model()}, {os.cpu_count()} cores"


def write_results(name, workload, figure, details=None, results_dir=None):
    """Writes bench/results/<name>.json, the file bench/RESULTS.md's current figures render from
    (`make docs`): the workload, its figure as one line, the command as run, the CPU, its ISA
    flags, the one-minute load average and the UTC date, with `details` (the benchmark's own
    table) beside them. Written under a temporary name, then renamed."""
    import datetime
    import json
    import shlex
    import sys

    from albert_tf.demo import machine as demo_machine
    from albert_tf.files import io_utils

    cpu = demo_machine.cpu_description()
    result = {"workload": workload, "figure": figure,
              "command": " ".join(shlex.quote(word) for word in [".venv/bin/python", *sys.argv]),
              "cpu": f"{cpu['model']}, {cpu['cores']} cores",
              "isa": ", ".join(f"{flag} {'yes' if present else 'no'}" for flag, present in cpu["isa"].items()),
              "load": f"{os.getloadavg()[0]:.2f}",
              "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%MZ"),
              "details": details or {}}
    directory = results_dir or os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
    path = os.path.join(directory, f"{name}.json")
    io_utils.atomic_write_text(path, json.dumps(result, indent=1, ensure_ascii=False) + "\n")
    return path
