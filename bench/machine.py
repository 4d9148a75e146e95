"""What a benchmark measured and on which machine: every maintained benchmark builds its table
with `row`, and `write_results` turns it into bench/results/<name>.json, whose `figure` line
(`figure_of`, the one way a figure is built from a table) bench/RESULTS.md renders (`make docs`).
Machines differ (some have AMX, some are AMD without it) and are often shared, so each file
names the CPU, its ISA flags and the load before and after the run."""

import os
import platform

# The one-minute load average when the benchmark started: what else was running before it.
LOAD_BEFORE = os.getloadavg()[0]
# A load above this before the run means other jobs shared the cores (figures noisy).
BUSY_LOAD_PER_CORE = 0.5
# Where write_results writes instead of bench/results/ (a test's scratch folder).
RESULTS_DIR_VARIABLE = "ALBERT_TF_BENCH_RESULTS_DIR"


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


def row(what, name, value, unit, reference=None, reference_value=None, note=None):
    """One row of a benchmark's table: `name`'s measured `value` in `unit` for `what` and, where
    the run measured a reference beside it, the reference's value and the ratio value/reference."""
    entry = {"what": what, "name": name, "value": float(value), "unit": unit}
    if reference is not None:
        entry.update(reference=reference, reference_value=float(reference_value),
                     ratio=float(value) / float(reference_value))
    if note:
        entry["note"] = note
    return entry


def _number(value):
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:.1f}" if abs(value) >= 10 else f"{value:.2f}"


def figure_of(table, headline):
    """The one line RESULTS renders: each row of `table` that `headline(row)` keeps, as
    `name value unit = ratio× reference (note)`, in the table's order, those of one `what` after it
    once (`what: row, row; what: row`)."""
    groups = []
    for entry in table:
        if not headline(entry):
            continue
        text = f"{entry['name']} {_number(entry['value'])} {entry['unit']}"
        if "ratio" in entry:
            text += f" = {entry['ratio']:.2f}× {entry['reference']}"
        if "note" in entry:
            text += f" ({entry['note']})"
        if groups and groups[-1][0] == entry["what"]:
            groups[-1][1].append(text)
        else:
            groups.append((entry["what"], [text]))
    if not groups:
        raise ValueError(f"no row of the table is a headline row (rows: {[e['name'] for e in table]})")
    return "; ".join(f"{what}: {', '.join(texts)}" for what, texts in groups)


def write_results(name, workload, table, headline, settings=None, results_dir=None):
    """Writes bench/results/<name>.json, the file bench/RESULTS.md's current figures render from
    (`make docs`): the workload, its figure (`figure_of(table, headline)`), the command as run, the
    CPU, its ISA flags, the load average before and after the run and the UTC date, with the
    run's settings and whole table beside them (to $ALBERT_TF_BENCH_RESULTS_DIR/ when that is
    set). Written under a temporary name, then renamed."""
    import datetime
    import json
    import shlex
    import sys

    from albert_tf.demo import machine as demo_machine
    from albert_tf.files import io_utils

    cpu = demo_machine.cpu_description()
    figure = figure_of(table, headline)
    if LOAD_BEFORE > BUSY_LOAD_PER_CORE * cpu["cores"]:
        figure += f"; other jobs on the machine (load {LOAD_BEFORE:.1f} before the run): noisy"
    result = {"workload": workload, "figure": figure,
              "command": " ".join(shlex.quote(word) for word in [".venv/bin/python", *sys.argv]),
              "cpu": f"{cpu['model']}, {cpu['cores']} cores",
              "isa": ", ".join(f"{flag} {'yes' if present else 'no'}" for flag, present in cpu["isa"].items()),
              "load": f"{LOAD_BEFORE:.2f} before the run, {os.getloadavg()[0]:.2f} after",
              "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%MZ"),
              "details": {"settings": settings or {}, "table": table}}
    directory = (results_dir or os.environ.get(RESULTS_DIR_VARIABLE)
                 or os.path.join(os.path.dirname(os.path.abspath(__file__)), "results"))
    path = os.path.join(directory, f"{name}.json")
    io_utils.atomic_write_text(path, json.dumps(result, indent=1, ensure_ascii=False) + "\n")
    return path
