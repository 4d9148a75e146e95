"""`make docs`: fills the marked blocks of the documents with figures rendered from the results
files the measuring runs wrote, so a figure has one source and a document cannot drift from it.

A block is `<!-- results:NAME -->` … `<!-- /results -->` (on one line or several); NAME is one
of RENDERERS, or `bench-figure-W`: the figure of bench/results/W.json with its command, machine
and date. `python -m albert_tf.demo.docs_results` rewrites every block of DOCUMENTS in place;
`--check` only reports the stale ones (exit 1). The sources:

- docs/results/demo.json: `make demo`'s summary.json (copy demo_output/summary.json there), or
  the transcript of a run that kept none (it says so in `provenance`);
- docs/results/lr_sweep.json: `python -m albert_tf.demo.lr_sweep`'s results file;
- docs/results/paper_study.json: `make paper`'s study.json (study_output/study.json);
- bench/results/*.json: one file per workload, each with `workload`, `figure`, `command`, `cpu`,
  `isa`, `load` and `date` (and `provenance` when transcribed by hand).
"""

import argparse
import glob
import json
import os
import re
import sys

from albert_tf.demo import study_report, verdicts
from albert_tf.files import io_utils

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOCUMENTS = ("README.md", "docs/demo.md", "docs/paper_study.md", "bench/RESULTS.md",
             "docs/fine_tuning.md")
# Documents whose blocks are rendered and checked as DOCUMENTS', but whose older prose still
# holds figures no results file records (tests/test_docs_results.py checks DOCUMENTS' prose).
BLOCKS_ONLY = ("docs/serving.md", "docs/pretraining.md")
RENDERED = DOCUMENTS + BLOCKS_ONLY
DEMO = "docs/results/demo.json"
LR_SWEEP = "docs/results/lr_sweep.json"
PAPER = "docs/results/paper_study.json"
BENCH = "bench/results"
BLOCK = re.compile(r"(<!-- results:([\w-]+) -->)(.*?)(<!-- /results -->)", re.S)
# The paper's own figures (ALBERT-base, Table 6), quoted beside the study's.
PAPER_TABLE6 = {"nsp_on_nsp": 90.5, "nsp_on_sop": 52.0, "sop_on_nsp": 78.9, "sop_on_sop": 86.5}


def load(path):
    with open(os.path.join(REPO, path), encoding="utf-8") as reader:
        return json.load(reader)


def _machine(cpu):
    isa = ", ".join(flag for flag, present in cpu.get("isa", {}).items() if present) or "n/a"
    missing = ", ".join(f"no {flag}" for flag, present in cpu.get("isa", {}).items() if not present)
    return f"{cpu.get('model', '?')}, {cpu.get('cores', '?')} cores; {isa}{'; ' + missing if missing else ''}"


def rounded_verdict(gain_points, se_points, seeds):
    """Issue 50's rule on figures printed to 0.1 point: the verdict at both ends of the
    rounding, or "at the edge" when the rounding alone could change it."""
    ends = {verdicts.verdict((gain_points + dg) / 100, max(se_points + ds, 0.0) / 100, seeds)
            for dg in (-0.05, 0.05) for ds in (-0.05, 0.05)}
    if len(ends) == 1:
        return ends.pop()
    return f"{verdicts.NOT_RESOLVED} (at the edge: the rounded figures do not decide)"


# ---- the demo

def _demo_cells(source):
    """{size: figures in points} from a summary.json or a transcript."""
    cells = {}
    for size, cell in source["data_efficiency"].items():
        if "gain_points" in cell:
            cells[size] = dict(cell)
            continue
        rates = verdicts.one_class_rates(cell["majority_rate"])
        means = [verdicts.kept_scores(cell[arm], rates) for arm in ("pretrained", "random_init")]
        cells[size] = {"fine_tuning_steps": cell.get("fine_tuning_steps"),
                       "pretrained_mean_points": 100 * verdicts.mean_std(means[0])[0] if means[0] else None,
                       "random_init_mean_points": 100 * verdicts.mean_std(means[1])[0] if means[1] else None,
                       "gain_points": None if cell["gain"] is None else 100 * cell["gain"],
                       "se_points": None if cell["gain_se"] is None else 100 * cell["gain_se"],
                       "seeds": cell["seeds"], "kept_seeds": cell["kept_seeds"],
                       "positive_seeds": cell["positive_seeds"], "collapsed": cell["collapsed"],
                       "verdict": cell["verdict"]}
    return cells


def _verdict_of(cell):
    if "verdict" in cell:
        return cell["verdict"]
    if cell["gain_points"] is None or cell["se_points"] is None:
        return verdicts.NOT_RESOLVED
    return rounded_verdict(cell["gain_points"], cell["se_points"], cell.get("kept_seeds", cell["seeds"]))


def _points(value):
    return "n/a" if value is None else f"{value:+.1f}"


def render_demo_summary(_):
    source = load(DEMO)
    evaluation, seconds = source["pretraining_eval"], source["seconds"]
    pretraining_seeds = source.get("pretraining_gain", {}).get("pretraining_seeds", 1)
    rows = []
    for size, cell in _demo_cells(source).items():
        collapsed = cell["collapsed"]
        se = "n/a" if cell["se_points"] is None else f"{cell['se_points']:.1f}"
        rows.append(f"| {size} | {cell.get('fine_tuning_steps') or ''} | {cell['pretrained_mean_points']:.1f} "
                    f"| {cell['random_init_mean_points']:.1f} | {_points(cell['gain_points'])} ± {se} "
                    f"| {cell['positive_seeds']}/{cell.get('kept_seeds', cell['seeds'])} "
                    f"| {collapsed['pretrained']} / {collapsed['random_init']} | {_verdict_of(cell)} |")
    lines = [
        f"`{source.get('command', 'make demo')}` on {source.get('date', 'an unrecorded date')}: "
        f"{_machine(source['cpu'])}; "
        f"`--precision={source['cpu'].get('precision')}`, `--cpu_replicas={source['cpu'].get('cpu_replicas')}`"
        f" (load average {source['cpu'].get('load_average')} at the check). Seconds: "
        + ", ".join(f"{step} {value}" for step, value in seconds.items()) + ".",
        "",
        f"Held-out masked-LM accuracy {float(evaluation['masked_lm_accuracy']):.3f}, sentence order "
        f"{float(evaluation['sentence_order_accuracy']):.3f} (step {evaluation['global_step']}); the exported "
        f"run's dev accuracy {float(source['fine_tuning_eval']['eval_accuracy']):.3f}.",
        "",
        "| training sentences | steps | pretrained (%) | random init (%) | paired gain ± SE (points) "
        "| seeds positive / kept | runs collapsed (pretrained / random init) | verdict (issue 50's rule) |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
        *rows,
        "",
        f"The standard errors are over fine-tuning seeds of {pretraining_seeds} pretraining"
        f"{'' if pretraining_seeds == 1 else 's'}: pretraining's own variance is "
        f"{'not ' if pretraining_seeds == 1 else ''}in them.",
    ]
    if "provenance" in source:
        lines += ["", f"Source: `{DEMO}`, {source['provenance']}"]
    return "\n" + "\n".join(lines) + "\n"


def render_demo_compute(_):
    """The pretraining's FLOP and rate from the recipe and the measured seconds."""
    source = load(DEMO)
    recipe = source["recipe"]
    tokens = recipe["pretrain_steps"] * recipe["pretrain_batch"] * recipe["max_seq_length"]
    rate = tokens / source["seconds"]["pretraining"]
    mantissa, exponent = f"{5.65e6 * rate:.1e}".split("e")
    superscript = str(int(exponent)).translate(str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻"))
    return (f"{tokens / 1e6:.2f} M tokens in {source['seconds']['pretraining']} s (with evaluation and "
            f"checkpoints): {rate:,.0f} tokens/s, {mantissa} × 10{superscript} FLOP/s at 5.65 MFLOP a token")


# ---- the study

def render_paper_study(_):
    """A study.json that `make paper` wrote: its tables and findings as study.md prints them."""
    study = load(PAPER)
    findings = study["findings"]
    note = f" {study['note']}" if study.get("note") else ""
    lines = [f"`{study.get('command', 'make paper')}` (preset `{study['preset']}`) on "
             f"{study.get('date', 'an unrecorded date')}: {study_time(study)}; {_machine(study['cpu'])}; "
             f"load average {study.get('load_average_at_start', 'unrecorded')} at the start.{note}", "",
             f"Source: `{PAPER}`.", ""]
    for title, table in study_report.tables(study).items():
        lines += [f"#### {title}", "", table, ""]
    lines += ["#### The paper's findings at this scale", "",
              *study_report.finding_lines(findings, study["settings"].get("verdicts", True)), "",
              *study_report.tries_section(study, study["settings"].get("verdicts", True))[2:]]
    return "\n" + "\n".join(lines).rstrip("\n") + "\n"


def study_time(study):
    """How long a study.json's cells took. A study resumed over several invocations has no wall
    time of its own: the sum of its cells' times is the figure, beside what the last one ran."""
    seconds = study["seconds"]
    cells = f"{seconds['all_cells'] / 60:.1f} minutes of cells (two at a time)"
    ran_now, planned = len(study.get("cells_run_now", [])), len(seconds["cells"])
    if ran_now == planned:
        return f"{seconds['this_run_wall'] / 60:.1f} minutes wall, {cells}"
    return (f"{cells} over more than one invocation; the last ran {ran_now} of the {planned} cells "
            f"in {seconds['this_run_wall'] / 60:.1f} minutes wall")


def render_paper_minutes(_):
    return study_time(load(PAPER))


# ---- the own-data sweep

def _rate(value):
    """1e-4 as `1e-4`, 3e-05 as `3e-5`."""
    mantissa, exponent = f"{value:.0e}".split("e")
    return f"{mantissa}e{int(exponent)}"


# The verdict rule's words, said of a rate against the reference rate (positive: better than it).
_SWEEP_VERDICTS = {verdicts.REPRODUCED: "better, beyond the 95% interval",
                   verdicts.NOT_REPRODUCED: "worse, beyond the 95% interval"}


def _sweep_cell(cell, seeds):
    """`mean ± SE`, with the collapsed runs and, when fewer ran, the seeds run; `not run`."""
    if cell is None:
        return "not run"
    notes = [f"{cell['collapsed']} collapsed"] if cell["collapsed"] and cell["mean"] is not None else []
    if len(cell["seeds"]) < len(seeds):
        notes.append(f"{len(cell['seeds'])} of {len(seeds)} seeds")
    note = f" ({', '.join(notes)})" if notes else ""
    if cell["mean"] is None:
        return f"all {cell['collapsed']} collapsed{note}"
    se = "n/a" if cell["se"] is None else f"{100 * cell['se']:.1f}"
    return f"{100 * cell['mean']:.1f} ± {se}{note}"


def render_lr_sweep(_):
    """Per task: dev accuracy (%) by learning rate (columns) and steps and batch (rows), mean ±
    standard error over the seeds that did not collapse; then each rate against the reference
    rate, paired by seed."""
    source = load(LR_SWEEP)
    settings = source["settings"]
    start_load = source.get("load_average_at_start")
    lines = [f"`{source['command']}` on {source['date']}: {_machine(source['cpu'])}"
             + ("" if start_load is None else f"; load average {start_load} at the start") + ". "
             + (f"{source['note']} " if source.get("note") else "")
             + f"{source['seconds']['runs']} runs of `run_classifier.py`, median {source['seconds']['median_run']} s "
             f"each (a shared machine: the seconds are noisy; the accuracies do not depend on the load); "
             f"`--max_seq_length={settings['max_seq_length']}`, `--precision={settings['precision']}`, warm-up "
             f"{settings['warmup']}, seeds {', '.join(map(str, settings['seeds']))}, from "
             f"`{settings['init_checkpoint'] or 'random init'}`.", ""]
    for name, task in source["tasks"].items():
        rates = sorted({cell["learning_rate"] for cell in task["cells"]})
        rows = sorted({(cell["batch_size"], cell["train_steps"]) for cell in task["cells"]})
        by_key = {(c["batch_size"], c["train_steps"], c["learning_rate"]): c for c in task["cells"]}
        labels = ", ".join(f"{label} {count}" for label, count in sorted(task["dev_label_counts"].items()))
        lines += [f"**{name}** ({task['format']}, {task['train_examples']} training examples; dev: {labels}; "
                  f"majority class {100 * task['majority_rate']:.1f}%): dev accuracy (%), mean ± SE",
                  "", "| batch | steps | " + " | ".join(f"lr {_rate(rate)}" for rate in rates) + " |",
                  "|---:|---:|" + "---:|" * len(rates)]
        for batch, step_count in rows:
            lines.append(f"| {batch} | {step_count} | " + " | ".join(
                _sweep_cell(by_key.get((batch, step_count, rate)), settings["seeds"]) for rate in rates) + " |")
        lines.append("")
        for comparison in task["against_reference"]:
            gain = verdicts.points(comparison["gain"], comparison["se"])
            lines.append(f"- lr {_rate(comparison['learning_rate'])} against {_rate(comparison['reference'])}, "
                         f"{comparison['train_steps']} steps, batch {comparison['batch_size']}: {gain} points "
                         f"over {comparison['n']} paired seeds ({comparison['positive']} better): "
                         f"{_SWEEP_VERDICTS.get(comparison['verdict'], comparison['verdict'])}")
        best = task["best"]
        lines += ["", "Best cell with no run collapsed: " + (
            "none" if best is None else f"lr {_rate(best['learning_rate'])}, {best['train_steps']} steps, "
            f"batch {best['batch_size']}: {_sweep_cell(best, settings['seeds'])}") + ".", ""]
    lines.append(f"Source: `{LR_SWEEP}`.")
    return "\n" + "\n".join(lines) + "\n"


# ---- benchmarks

def bench_results():
    """The results files of bench/, sorted by workload."""
    found = []
    for path in sorted(glob.glob(os.path.join(REPO, BENCH, "*.json"))):
        with open(path, encoding="utf-8") as reader:
            found.append((os.path.relpath(path, REPO), json.load(reader)))
    return sorted(found, key=lambda item: str(item[1].get("workload", item[0])))


def _bench_machine(result):
    """A benchmark results file's CPU, ISA and load, as its rows and figures print them."""
    return "; ".join(f"{'load ' if key == 'load' else ''}{result[key]}"
                     for key in ("cpu", "isa", "load") if result.get(key))


def render_bench_current(_):
    lines = ["| workload | current figure | command | machine | date | source |", "|---|---|---|---|---|---|"]
    for path, result in bench_results():
        if "figure" not in result:
            lines.append(f"| {result.get('workload', path)} | (no `figure` in the file) | | | | `{path}` |")
            continue
        machine = _bench_machine(result)
        mark = " (transcribed)" if "provenance" in result else ""
        command = result["command"].replace("|", "\\|")
        lines.append(f"| {result['workload']} | {result['figure']} | `{command}` | {machine} | "
                     f"{result.get('date', '')}{mark} | `{path}` |")
    return "\n" + "\n".join(lines) + "\n"


BENCH_FIGURE = "bench-figure-"


def render_bench_figure(workload):
    """One results file's figure, then its command, machine and date, on one line."""
    result = load(os.path.join(BENCH, f"{workload}.json"))
    machine = _bench_machine(result)
    mark = ", transcribed" if "provenance" in result else ""
    return (f"{result['figure']} (`{result['command']}`; {machine}; "
            f"{result.get('date', '')}{mark}; `{BENCH}/{workload}.json`)")


RENDERERS = {"demo-summary": render_demo_summary, "demo-compute": render_demo_compute,
             "paper-study": render_paper_study, "paper-minutes": render_paper_minutes,
             "bench-current": render_bench_current, "lr-sweep": render_lr_sweep}


def render(text, document="<text>"):
    """`text` with every block filled from its source."""
    def fill(match):
        name = match.group(2)
        if name.startswith(BENCH_FIGURE):
            return match.group(1) + render_bench_figure(name[len(BENCH_FIGURE):]) + match.group(4)
        if name not in RENDERERS:
            raise ValueError(f"{document}: unknown results block {name!r}; expected one of "
                             f"{', '.join(sorted(RENDERERS))}")
        return match.group(1) + RENDERERS[name](match.group(3)) + match.group(4)
    return BLOCK.sub(fill, text)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="report stale blocks, rewrite nothing")
    args = parser.parse_args(argv)
    stale = []
    for document in RENDERED:
        path = os.path.join(REPO, document)
        with open(path, encoding="utf-8") as reader:
            text = reader.read()
        rendered = render(text, document)
        if rendered != text:
            stale.append(document)
            if not args.check:
                io_utils.atomic_write_text(path, rendered)
    verb = "stale" if args.check else "rewritten"
    print(f"{verb}: {', '.join(stale) if stale else 'none'}")
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
