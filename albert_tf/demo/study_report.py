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
PAPER_TABLE6 = ("Paper (ALBERT-base, Table 6): trained with NSP the head solves NSP at 90.5% and SOP "
                "at 52.0%; trained with SOP it solves NSP at 78.9% and SOP at 86.5%.")


mean_std = verdicts.mean_std


def one_class_rates(measurements, task):
    """The accuracies of a run of `task` that answers one class (verdicts.collapsed)."""
    found = measurements["baselines"].get(task, {})
    if "majority_label" in found:
        return verdicts.one_class_rates(found["majority_label"])
    return verdicts.one_class_rates(found["majority_tag"], labels=found.get("tags", 3))


def _score(values, rates=()):
    """Mean ± sample std of the runs that did not collapse, the collapsed ones counted."""
    kept = verdicts.kept_scores(values, rates)
    dropped = len(values) - len(kept)
    if not kept:
        return f"all {dropped} collapsed"
    mean, std = mean_std(kept)
    return f"{100 * mean:.1f} ± {100 * std:.1f}" + (f" ({dropped} collapsed)" if dropped else "")


def random_init_arm(measurements, task, name):
    """The random-init arm of `name`'s architecture on `task`: `random-init` for the base
    architecture, `random-init-<name>` when the study ran one, else None (no like arm)."""
    models = measurements["models"]
    if models[name]["config"] == models["base"]["config"]:
        return "random-init"
    arm = f"random-init-{name}"
    return arm if arm in measurements["finetuning"][task] else None


def _downstream_cells(measurements, name):
    """`score (paired gain over random init of the same architecture ± its standard error)`
    for every task; `no like arm` when the study has no random-init arm of that architecture."""
    cells = []
    for task, by_model in measurements["finetuning"].items():
        rates = one_class_rates(measurements, task)
        arm = random_init_arm(measurements, task, name)
        if arm is None:
            cells.append(f"{_score(by_model[name], rates)} (no random-init arm of this architecture)")
            continue
        comparison = verdicts.compare(by_model[name], by_model[arm], rates)
        cells.append(f"{_score(by_model[name], rates)} ({verdicts.points(comparison['gain'], comparison['se'])})")
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
             + [_score(by_model[name], one_class_rates(measurements, task))
                for task, by_model in measurements["finetuning"].items()]
             for name, spec in models.items()]
            + [[f"random initialisation ({'base architecture' if arm == 'random-init' else arm[12:]})",
                f"{random_init_parameters(measurements, arm):,}"]
               + [_score(by_model[arm], one_class_rates(measurements, task))
                  for task, by_model in measurements["finetuning"].items()]
               for arm in random_init_arms(measurements)]
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


def random_init_parameters(measurements, arm):
    """The parameters of a random-init arm: those of the architecture it shares."""
    if arm == "random-init":
        return measurements["random_init_parameters"]
    return measurements["models"][arm[len("random-init-"):]]["parameters"]


def random_init_arms(measurements):
    """The random-init arms the study ran: the base architecture's, then any other's."""
    first = next(iter(measurements["finetuning"].values()))
    return ["random-init"] + sorted(arm for arm in first if arm.startswith("random-init-"))


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
        rates = verdicts.one_class_rates(cell["majority_rate"])
        counted = cell["with_collapses"]
        rows.append([size, _score(cell["pretrained"], rates), _score(cell["random_init"], rates),
                     verdicts.points(cell["gain"], cell["gain_se"]),
                     f"{cell['positive_seeds']}/{cell['kept_seeds']}",
                     f"{cell['collapsed']['pretrained']} / {cell['collapsed']['random_init']}",
                     verdicts.points(counted["gain"], counted["gain_se"])
                     + (f", {counted['verdict']}" if measurements["settings"].get("verdicts", True) else "")])
    return _table(["training sentences", "pretrained (base)", "random init",
                   "paired gain ± SE (points), collapses left out", "seeds positive / kept",
                   "runs collapsed to one class (pretrained / random init)",
                   "with collapses counted"], rows)


def tries_section(measurements, with_verdicts):
    """The pre-registered tries: each with the pass test, and its result when it ran."""
    lines = ["## Pre-registered tries at making pretraining pay", "", tries.PASS_TEST_TEXT + ".", ""]
    smallest = next(iter(measurements["efficiency"]), None)
    by_arm = measurements["efficiency"].get(smallest, {})
    for name, spec in tries.TRIES.items():
        if not measurements.get("tries") or name not in by_arm:
            lines.append(f"- {spec['label']}: not run (`--tries` runs it).")
            continue
        passed, comparison = tries.passes(by_arm, name, measurements["baselines"]["sst2"]["majority_label"])
        measured = (f"{spec['label']}: at {smallest} sentences, "
                    f"{verdicts.describe(comparison, with_verdicts=False)}")
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


def _finding(claim, difference, se, detail, seeds=None, verdict=None):
    """`difference` is oriented so that the paper's direction is positive; `seeds`: how many
    paired seeds `se` comes from (None: a binomial error); `verdict` overrides the rule's."""
    return {"claim": claim, "verdict": verdict or verdicts.verdict(difference, se, seeds),
            "difference": difference, "se": se, "detail": detail}


def heldout_pairs(measurements, form):
    """How many distinct held-out pairs of `form` the accuracies were measured on (the
    evaluation repeats the set to fill its batches, so no more than the set holds)."""
    pairs = measurements["pairs"][form]["heldout"]
    return pairs["swapped"] + pairs["random_document"] + pairs["in_order"]


def _compared(claim, measurements, task, better, worse):
    """A finding on `better` against `worse` fine-tuned on `task`, paired by seed, collapsed
    runs left out and counted (verdicts.compare)."""
    by_model = measurements["finetuning"][task]
    rates = one_class_rates(measurements, task)
    comparison = verdicts.compare(by_model[better], by_model[worse], rates)
    means = [verdicts.kept_scores(by_model[arm], rates) for arm in (better, worse)]
    shown = " vs ".join("n/a" if not kept else f"{100 * mean_std(kept)[0]:.1f}" for kept in means)
    finding = _finding(f"{claim}, {task}", comparison["gain"], comparison["se"],
                       f"{shown}, {verdicts.describe(comparison, with_verdicts=False)}",
                       verdict=comparison["verdict"])
    finding.update(collapsed=comparison["collapsed"], with_collapses=comparison["with_collapses"])
    return finding


def sentence_pair_findings(measurements):
    """Each head against the majority label on its own task first: a head that did not learn
    its own task (a constant head sits at the majority label) makes the paper's contrast for
    it not measurable, so a near-chance result on the other task cannot pass by itself."""
    models = measurements["models"]
    accuracy = lambda name, form: models[name]["heldout"][form]["sentence_order_accuracy"]  # noqa: E731
    se = lambda name, form: verdicts.binomial_se(accuracy(name, form), heldout_pairs(measurements, form))  # noqa: E731
    chance = {form: majority(measurements, form) for form in ("sop", "nsp")}
    shown = lambda name, form: (f"{100 * accuracy(name, form):.1f} vs majority "  # noqa: E731
                                f"{100 * chance[form]:.1f}")
    above = {}
    result = []
    for name, form, label, paper in (("nsp", "nsp", "NSP", "90.5"), ("base", "sop", "SOP", "86.5")):
        finding = _finding(f"{label}-trained solves held-out {label} pairs above the majority label "
                           f"(Table 6: {paper}%)", accuracy(name, form) - chance[form], se(name, form),
                           shown(name, form))
        above[name] = finding["verdict"] == verdicts.REPRODUCED
        result.append(finding)
    contrast = "NSP-trained solves NSP pairs but not SOP pairs (Table 6: 90.5% against 52.0%)"
    if above["nsp"]:
        on_nsp, on_sop = (accuracy("nsp", form) - chance[form] for form in ("nsp", "sop"))
        result.append(_finding(contrast, on_nsp - on_sop, math.hypot(se("nsp", "nsp"), se("nsp", "sop")),
                               f"above the majority label by {100 * on_nsp:.1f} points on NSP pairs, "
                               f"{100 * on_sop:.1f} on SOP pairs"))
    else:
        result.append(_finding(contrast, None, None,
                               f"the NSP-trained head is at {shown('nsp', 'nsp')} on its own NSP pairs: "
                               "it learnt nothing there, so the contrast is not measured",
                               verdict=verdicts.NOT_MEASURABLE))
    result.append(_finding("SOP-trained beats NSP-trained on held-out SOP pairs (Table 6)",
                           accuracy("base", "sop") - accuracy("nsp", "sop"),
                           math.hypot(se("base", "sop"), se("nsp", "sop")),
                           f"{100 * accuracy('base', 'sop'):.1f} vs {100 * accuracy('nsp', 'sop'):.1f}"))
    result.append(_finding("SOP-trained solves held-out NSP pairs above the majority label (Table 6: 78.9%)",
                           accuracy("base", "nsp") - chance["nsp"], se("base", "nsp"), shown("base", "nsp")))
    return result


def findings(measurements):
    """Each of the paper's findings with its difference, standard error and verdict
    (albert_tf.demo.verdicts). Held-out accuracies come from one pretraining run per model, so
    their standard error is the binomial one of the pairs measured: the spread over pretraining
    seeds is not in it. "Pretraining beats random init" compares arms of one architecture only;
    the architecture's own effect is a finding of the random-init arms."""
    models = measurements["models"]
    params = {name: spec["parameters"] for name, spec in models.items()}
    by_e = sorted((spec["config"]["embedding_size"], params[name]) for name, spec in models.items()
                  if name == "base" or name.startswith("E"))
    result = sentence_pair_findings(measurements) + [
        _finding("not-shared has more parameters than all-shared (Table 5)",
                 params["not-shared"] - params["base"], 0.0,
                 f"{params['not-shared']:,} vs {params['base']:,} (exact counts)",
                 verdict=verdicts.exact_verdict(params["not-shared"] - params["base"])),
        _finding("a smaller E gives fewer parameters (Table 4)",
                 min(b[1] - a[1] for a, b in zip(by_e, by_e[1:])), 0.0,
                 ", ".join(f"E={size}: {count:,}" for size, count in by_e) + " (exact counts)",
                 verdict=verdicts.exact_verdict(min(b[1] - a[1] for a, b in zip(by_e, by_e[1:])))),
    ]
    for task in measurements["finetuning"]:
        result.append(_compared("SOP fine-tunes better than NSP (Table 6)", measurements, task, "base", "nsp"))
        result.append(_compared("not-shared fine-tunes better than all-shared (Table 5)",
                                measurements, task, "not-shared", "base"))
        for name, spec in models.items():
            claim = f"pretraining beats random init: {spec['label']}"
            arm = random_init_arm(measurements, task, name)
            if arm is None:
                result.append(_finding(
                    f"{claim}, {task}", None, None,
                    "no random-init arm of this architecture: against the base architecture's it "
                    "would measure architecture and pretraining together",
                    verdict=verdicts.NOT_MEASURABLE))
                continue
            result.append(_compared(claim, measurements, task, name, arm))
            if arm != "random-init":
                result.append(_compared(f"architecture alone, both from random init: {spec['label']} "
                                        "against the base architecture (positive: it fine-tunes better)",
                                        measurements, task, arm, "random-init"))
    for size, cell in efficiency_summaries(measurements).items():
        finding = _finding(
            f"pretraining beats random init at {size} training sentences (paired subsets)",
            cell["gain"], cell["gain_se"], efficiency.describe(size, cell, with_verdicts=False).split(": ", 1)[1],
            verdict=cell["verdict"])
        finding.update(collapsed=cell["collapsed"], with_collapses=cell["with_collapses"])
        result.append(finding)
    return result


VERDICT_RULE = (
    "Verdict rule (issue 50's; the settings fixed before the run): every difference is oriented "
    "so that the paper's direction is positive and carries its standard error: downstream ones "
    "paired by seed (the differences' standard deviation over the square root of the number of "
    "seeds), held-out sentence-pair ones the binomial error of the pairs measured (one pretraining "
    "run per model: the spread over pretraining seeds is not in it). REPRODUCED only when the "
    "difference lies beyond its two-sided 95% interval in the paper's direction (t distribution at "
    "the number of seeds less one: 4.30 standard errors at 3 seeds, 2.78 at 5; 1.96 for held-out "
    "accuracies), NOT REPRODUCED only when it does so the other way, not resolved otherwise (also "
    "with one seed or a standard error of 0). A run whose accuracy is that of always answering one "
    "class (within half a point) collapsed: its seed's pair is left out of the means and errors and "
    "counted beside them. \"Pretraining beats random init\" compares arms of one architecture only "
    "(not measurable without a random-init arm of it). Each sentence-pair head is first judged "
    "on its own task against the majority label.")
NO_VERDICTS = ("This preset checks the machinery: its numbers mean nothing, so no finding gets "
               "a verdict; the differences are listed only to show the computation runs.")


def finding_lines(report_findings, with_verdicts):
    """One markdown line per finding; without verdict words when `with_verdicts` is false."""
    lines = []
    for finding in report_findings:
        measured = f"{finding['claim']}: {finding['detail']}"
        counted = finding.get("with_collapses", {}).get("verdict")
        if with_verdicts and counted and counted != finding["verdict"]:
            measured += f" (with the collapsed runs counted it would read {counted})"
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
