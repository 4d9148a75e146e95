"""The study's report: study.json (every number), study.md (the paper's tables in their shapes,
the machine, the settings, and each finding's direction computed from the measured numbers)
and study.png.

Each finding gets the verdict of albert_tf.demo.verdicts (its difference against two standard
errors); the smoke preset, whose numbers mean nothing, gets none.
"""

import json
import math
import os

from albert_tf.demo import efficiency, machine, tries, verdicts
from albert_tf.files import io_utils

TASK_NAMES = {"sst2": "movie-review sentiment (acc.)", "pos": "Brown POS tagging (acc.)"}
NEAR_CHANCE = 0.05  # "near chance": within 5 points of always answering the majority label
PAPER_TABLE6 = ("Paper (ALBERT-base, Table 6): trained with NSP it solves SOP at 52.0%; trained "
                "with SOP it solves NSP at 78.9% and SOP at 86.5%.")


mean_std = verdicts.mean_std


def _score(values):
    mean, std = mean_std(values)
    return f"{100 * mean:.1f} ± {100 * std:.1f}"


def _downstream_cells(measurements, name):
    """`score (paired gain over random init ± its standard error)` for every task."""
    cells = []
    for by_model in measurements["finetuning"].values():
        comparison = verdicts.paired(by_model[name], by_model["random-init"])
        cells.append(f"{_score(by_model[name])} ({verdicts.points(comparison['gain'], comparison['se'])})")
    return cells


def _table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def _task_header(measurements):
    return [f"{TASK_NAMES[task]} (paired gain vs random init ± SE)" for task in measurements["finetuning"]]


def tables(measurements):
    """{title: markdown table} in the paper's shapes."""
    models = measurements["models"]
    tasks = _task_header(measurements)
    base_e = models["base"]["config"]["embedding_size"]
    by_e = sorted([(spec["config"]["embedding_size"], name) for name, spec in models.items()
                   if name == "base" or name.startswith("E")])
    heldout = lambda name, form, key: f"{100 * models[name]['heldout'][form][key]:.1f}"  # noqa: E731
    result = {
        "Table 4 shape: embedding size E (all-shared, SOP)": _table(
            ["E", "parameters"] + tasks,
            [[f"{size}{' (base)' if size == base_e and name == 'base' else ''}",
              f"{models[name]['parameters']:,}"] + _downstream_cells(measurements, name)
             for size, name in by_e]),
        "Table 5 shape: cross-layer parameter sharing": _table(
            ["sharing", "parameters"] + tasks,
            [[label, f"{models[name]['parameters']:,}"] + _downstream_cells(measurements, name)
             for name, label in (("base", "all-shared (base)"), ("not-shared", "not-shared"))]),
        "Table 6 shape: sentence-prediction task (held-out accuracy, %)": _table(
            ["pretraining", "held-out MLM", "held-out NSP pairs", "held-out SOP pairs"] + tasks,
            [[label, heldout(name, "sop", "masked_lm_accuracy"),
              heldout(name, "nsp", "sentence_order_accuracy"),
              heldout(name, "sop", "sentence_order_accuracy")] + _downstream_cells(measurements, name)
             for name, label in (("mlm-only", "MLM only"), ("nsp", "NSP"), ("base", "SOP (base)"))]
            + [["majority label (no model)", "", f"{100 * majority(measurements, 'nsp'):.1f}",
                f"{100 * majority(measurements, 'sop'):.1f}"] + [""] * len(tasks)]),
        "Every model against random initialisation (same fine-tuning)": _table(
            ["model", "parameters"] + [TASK_NAMES[t] for t in measurements["finetuning"]],
            [[spec["label"], f"{spec['parameters']:,}"]
             + [_score(by_model[name]) for by_model in measurements["finetuning"].values()]
             for name, spec in models.items()]
            + [["random initialisation (base architecture)",
                f"{measurements['random_init_parameters']:,}"]
               + [_score(by_model["random-init"]) for by_model in measurements["finetuning"].values()]]
            + baseline_rows(measurements)),
        "Hyperparameters chosen on a slice of the training set (seed 1; dev never used)": _table(
            ["selection", "arm", "accuracy on the slice by learning rate (%)", "chosen"],
            [[key, arm, ", ".join(f"{rate}: {100 * score:.1f}" for rate, score in choice["scores"].items()),
              f"{choice['chosen']:g}"]
             for key, by_arm in measurements["selection"].items() for arm, choice in by_arm.items()]),
        "Data efficiency: movie-review sentiment, base pretrained against random init, paired subsets":
            efficiency_table(measurements),
    }
    return result


BASELINE_NOTE = ("The rules without a model are scored on every dev word; run_tagging.py scores "
                 "the words that fit in --max_seq_length pieces (its log counts the rest), so on "
                 "long sentences the two differ slightly.")
BASELINE_LABELS = {"majority_label": "majority label / tag (no model)",
                   "most_frequent_tag_per_word": "most frequent tag per word (no model)"}


def baseline_rows(measurements):
    """The rules that need no model, beside the models: the majority label of each task and
    the tagger that gives each word its most frequent training tag."""
    found = measurements["baselines"]
    rows = []
    for key, label in BASELINE_LABELS.items():
        cells = []
        for task in measurements["finetuning"]:
            value = found.get(task, {}).get(key)
            if value is None and key == "majority_label":
                value = found.get(task, {}).get("majority_tag")
            cells.append("" if value is None else f"{100 * value:.1f}")
        rows.append([label, ""] + cells)
    return rows


def efficiency_summaries(measurements):
    """{size name: efficiency.summary of base against random init}."""
    majority_rate = measurements["baselines"]["sst2"]["majority_label"]
    return {size: efficiency.summary(by_arm["base"], by_arm["random-init"], majority_rate)
            for size, by_arm in measurements["efficiency"].items()}


def efficiency_table(measurements):
    rows = []
    for size, cell in efficiency_summaries(measurements).items():
        rows.append([size, _score(cell["pretrained"]), _score(cell["random_init"]),
                     verdicts.points(cell["gain"], cell["gain_se"]),
                     f"{cell['positive_seeds']}/{cell['seeds']}",
                     f"{cell['collapsed']['pretrained']} / {cell['collapsed']['random_init']}"])
    return _table(["training sentences", "pretrained (base)", "random init",
                   "paired gain ± SE (points)", "seeds positive",
                   "runs collapsed to one class (pretrained / random init)"], rows)


def tries_section(measurements, with_verdicts):
    """The pre-registered tries: each with the pass test, and its result when it ran."""
    lines = ["## Pre-registered tries at making pretraining pay", "", tries.PASS_TEST_TEXT + ".", ""]
    smallest = next(iter(measurements["efficiency"]), None)
    by_arm = measurements["efficiency"].get(smallest, {})
    for name, spec in tries.TRIES.items():
        if not measurements.get("tries") or name not in by_arm:
            lines.append(f"- {spec['label']}: not run (`--tries` runs it).")
            continue
        passed, comparison = tries.passes(by_arm, name)
        measured = (f"{spec['label']}: paired gain {verdicts.points(comparison['gain'], comparison['se'])} "
                    f"points at {smallest} sentences, {comparison['positive']}/{comparison['n']} seeds positive")
        if with_verdicts:
            measured = f"{'PASSES' if passed else 'fails'} the test: {measured}"
        lines.append(f"- {measured}")
    return lines + [""]


def majority(measurements, form):
    """The accuracy of always answering the majority label on the held-out pairs of `form`:
    chance here (the original's data is not 50/50, see study.pair_composition)."""
    fraction = measurements["pairs"][form]["heldout"]["label_1_fraction"]
    return max(fraction, 1 - fraction)


def composition(measurements):
    """One line per held-out set: its pairs by kind."""
    lines = []
    for form, splits in measurements["pairs"].items():
        pairs = splits["heldout"]
        total = pairs["swapped"] + pairs["random_document"] + pairs["in_order"]
        lines.append(f"- held-out {form.upper()} pairs: {total} = {pairs['in_order']} in order (label 0), "
                     f"{pairs['swapped']} swapped, {pairs['random_document']} with a second segment "
                     f"from another document (label 1); the majority label is "
                     f"{100 * majority(measurements, form):.1f}%.")
    return lines


def _finding(claim, difference, se, detail):
    """`difference` is oriented so that the paper's direction is positive."""
    return {"claim": claim, "verdict": verdicts.verdict(difference, se), "difference": difference,
            "se": se, "detail": detail}


def heldout_pairs(measurements, form):
    """How many distinct held-out pairs of `form` the accuracies were measured on (the
    evaluation repeats the set to fill its batches, so no more than the set holds)."""
    pairs = measurements["pairs"][form]["heldout"]
    return pairs["swapped"] + pairs["random_document"] + pairs["in_order"]


def _downstream_finding(claim, measurements, task, better, worse):
    """The paper's claim that `better` fine-tunes better than `worse` on `task`, paired by seed."""
    by_model = measurements["finetuning"][task]
    comparison = verdicts.paired(by_model[better], by_model[worse])
    return _finding(f"{claim}, {task}", comparison["gain"], comparison["se"],
                    f"{100 * mean_std(by_model[better])[0]:.1f} vs {100 * mean_std(by_model[worse])[0]:.1f}, "
                    f"paired gain {verdicts.points(comparison['gain'], comparison['se'])} points "
                    f"over {comparison['n']} seeds, {comparison['positive']} positive")


def findings(measurements):
    """Each of the paper's findings with its difference, standard error and verdict
    (albert_tf.demo.verdicts). Held-out accuracies come from one pretraining run per model, so
    their standard error is the binomial one of the pairs measured: the spread over pretraining
    seeds is not in it. Sentence-pair findings are against the majority label (a head never
    trained, MLM only's, is no reference)."""
    models = measurements["models"]
    sop = lambda name, form: models[name]["heldout"][form]["sentence_order_accuracy"]  # noqa: E731
    se = lambda name, form: verdicts.binomial_se(sop(name, form), heldout_pairs(measurements, form))  # noqa: E731
    params = {name: spec["parameters"] for name, spec in models.items()}
    by_e = sorted((spec["config"]["embedding_size"], params[name]) for name, spec in models.items()
                  if name == "base" or name.startswith("E"))
    chance = {form: majority(measurements, form) for form in ("sop", "nsp")}
    result = [
        _finding("SOP-trained beats NSP-trained on held-out SOP pairs (Table 6)",
                 sop("base", "sop") - sop("nsp", "sop"), math.hypot(se("base", "sop"), se("nsp", "sop")),
                 f"{100 * sop('base', 'sop'):.1f} vs {100 * sop('nsp', 'sop'):.1f}"),
        _finding("SOP-trained solves held-out SOP pairs above the majority label (Table 6: 86.5%)",
                 sop("base", "sop") - chance["sop"], se("base", "sop"),
                 f"{100 * sop('base', 'sop'):.1f} vs majority {100 * chance['sop']:.1f}"),
        _finding("SOP-trained solves held-out NSP pairs above the majority label (Table 6: 78.9%)",
                 sop("base", "nsp") - chance["nsp"], se("base", "nsp"),
                 f"{100 * sop('base', 'nsp'):.1f} vs majority {100 * chance['nsp']:.1f}"),
        _finding(f"NSP-trained solves SOP near chance (within {100 * NEAR_CHANCE:.0f} points of "
                 "the majority label; Table 6: 52.0%)",
                 NEAR_CHANCE - abs(sop("nsp", "sop") - chance["sop"]), se("nsp", "sop"),
                 f"{100 * sop('nsp', 'sop'):.1f} vs majority {100 * chance['sop']:.1f}"),
        _finding("not-shared has more parameters than all-shared (Table 5)",
                 params["not-shared"] - params["base"], 0.0,
                 f"{params['not-shared']:,} vs {params['base']:,} (exact counts)"),
        _finding("a smaller E gives fewer parameters (Table 4)",
                 min(b[1] - a[1] for a, b in zip(by_e, by_e[1:])), 0.0,
                 ", ".join(f"E={size}: {count:,}" for size, count in by_e) + " (exact counts)"),
    ]
    for task in measurements["finetuning"]:
        result.append(_downstream_finding("SOP fine-tunes better than NSP (Table 6)", measurements,
                                          task, "base", "nsp"))
        result.append(_downstream_finding("not-shared fine-tunes better than all-shared (Table 5)",
                                          measurements, task, "not-shared", "base"))
        for name, spec in models.items():
            result.append(_downstream_finding(f"pretraining beats random init: {spec['label']}",
                                              measurements, task, name, "random-init"))
    for size, cell in efficiency_summaries(measurements).items():
        result.append(_finding(
            f"pretraining beats random init at {size} training sentences (paired subsets)",
            cell["gain"], cell["gain_se"],
            f"paired gain {verdicts.points(cell['gain'], cell['gain_se'])} points over "
            f"{cell['seeds']} seeds, {cell['positive_seeds']} positive"))
    return result


VERDICT_RULE = (
    "Verdict rule (fixed before any run): every difference is oriented so that the paper's "
    "direction is positive and carries its standard error: downstream ones paired by seed (the "
    "differences' standard deviation over the square root of the number of seeds), held-out "
    "sentence-pair ones the binomial error of the pairs measured (one pretraining run per model: "
    "the spread over pretraining seeds is not in it). REPRODUCED only when the difference "
    "exceeds two standard errors in the paper's direction, NOT REPRODUCED only when it does so "
    "the other way, not resolved otherwise: this budget cannot resolve that ordering. "
    "Sentence-pair findings are against the majority label, never against an untrained head.")
NO_VERDICTS = ("This preset checks the machinery: its numbers mean nothing, so no finding gets "
               "a verdict; the differences are listed only to show the computation runs.")


def finding_lines(report_findings, with_verdicts):
    """One markdown line per finding; without verdict words when `with_verdicts` is false."""
    lines = []
    for finding in report_findings:
        measured = f"{finding['claim']}: {finding['detail']}"
        lines.append(f"- {finding['verdict']}: {measured}" if with_verdicts else f"- {measured}")
    return lines


def markdown(measurements, report_tables, report_findings, cpu):
    seconds = measurements["seconds"]
    isa = ", ".join(f"{flag} {'yes' if present else 'no'}" for flag, present in cpu["isa"].items())
    lines = [f"# The ALBERT paper's tables in miniature (preset `{measurements['preset']}`)", "",
             f"Machine: {cpu['model']}, {cpu['cores']} cores; {isa}.",
             f"Time: {seconds['all_cells'] / 60:.1f} min over all cells; this invocation "
             f"{seconds['this_run_wall'] / 60:.1f} min wall.", "",
             "Downstream scores: dev accuracy, mean ± standard deviation over fine-tuning seeds "
             f"{measurements['settings']['seeds']} (%); in brackets the gain over random "
             "initialisation in points, paired by seed, ± its standard error.", ""]
    for title, table in report_tables.items():
        lines += [f"## {title}", "", table, ""]
        if title.startswith("Every model"):
            lines += [BASELINE_NOTE, ""]
    with_verdicts = measurements["settings"].get("verdicts", True)
    lines += [PAPER_TABLE6, "", *composition(measurements), "",
              "## The paper's findings at this scale (computed)", "",
              VERDICT_RULE if with_verdicts else NO_VERDICTS, "",
              *finding_lines(report_findings, with_verdicts), "",
              *tries_section(measurements, with_verdicts)]
    lines += ["", "## Settings", "", "```", json.dumps(measurements["settings"], indent=1), "```", ""]
    return "\n".join(lines)


def plot(measurements, path):
    """Downstream mean ± std per model and task, and held-out SOP / NSP accuracy per model."""
    import matplotlib
    matplotlib.use("Agg")  # no display needed
    from matplotlib import pyplot

    names = list(measurements["models"]) + ["random-init"]
    tasks = list(measurements["finetuning"])
    figure, axes = pyplot.subplots(1, len(tasks) + 1, figsize=(5 * (len(tasks) + 1), 4))
    for axis, task in zip(axes, tasks):
        stats = [mean_std(measurements["finetuning"][task][name]) for name in names]
        axis.bar(range(len(names)), [100 * m for m, _ in stats], yerr=[100 * s for _, s in stats],
                 color=["C0"] * (len(names) - 1) + ["C7"], capsize=3)
        low = min(100 * (m - s) for m, s in stats)
        axis.set_ylim(max(0.0, low - 5), None)
        axis.set_title(TASK_NAMES[task])
        axis.set_xticks(range(len(names)), names, rotation=45, ha="right")
    pretrained = list(measurements["models"])
    for offset, form in ((-0.2, "sop"), (0.2, "nsp")):
        axes[-1].bar([i + offset for i in range(len(pretrained))],
                     [100 * measurements["models"][n]["heldout"][form]["sentence_order_accuracy"]
                      for n in pretrained], width=0.4, label=f"held-out {form.upper()} pairs")
    for color, form in (("C0", "sop"), ("C1", "nsp")):  # chance: the majority label
        axes[-1].axhline(100 * majority(measurements, form), color=color, linestyle="--", linewidth=1)
    axes[-1].set_title("sentence-pair head accuracy (%)")
    axes[-1].set_xticks(range(len(pretrained)), pretrained, rotation=45, ha="right")
    axes[-1].legend(fontsize=8)
    figure.tight_layout()
    with io_utils.atomic_path(path) as temp:
        figure.savefig(temp, format="png", dpi=100)
    pyplot.close(figure)
    return path


def write(measurements, output_dir):
    """Writes study.json, study.md and study.png; returns {"markdown", "paths"}."""
    cpu = machine.cpu_description()
    report_tables, report_findings = tables(measurements), findings(measurements)
    text = markdown(measurements, report_tables, report_findings, cpu)
    paths = {name: os.path.join(output_dir, f"study.{name}") for name in ("json", "md", "png")}
    io_utils.atomic_write_text(paths["json"], json.dumps(
        {**measurements, "cpu": cpu, "findings": report_findings}, indent=2) + "\n")
    io_utils.atomic_write_text(paths["md"], text)
    plot(measurements, paths["png"])
    return {"markdown": text, "paths": paths}
