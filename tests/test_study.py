"""The paper study (`make paper`): its plan, cells, report, flags, and the smoke preset end to
end, run twice (CI checks the machinery, never the scores)."""

import json
import os
import re
import subprocess
import sys

import pytest

from albert_tf.demo import baselines, data_sources, efficiency, study, study_cells, study_report, tries, verdicts
from tests.conftest import REPO_ROOT


def test_the_full_plan_has_every_ablation_and_three_seeds_for_every_model():
    preset = study.PRESETS["full"]
    names = study.models(preset)
    base_e = preset["model"]["embedding_size"]
    assert {"base", "nsp", "mlm-only", "not-shared"} <= set(names)
    assert {f"E{size}" for size in preset["embedding_sizes"] if size != base_e} <= set(names)
    assert f"E{base_e}" not in names  # the base model is that row
    assert names["not-shared"]["config"]["num_hidden_groups"] == preset["model"]["num_hidden_layers"]
    assert names["mlm-only"]["sop_weight"] == 0 and names["nsp"]["data"] == "nsp"
    assert len(preset["seeds"]) >= 3
    cells = study.plan(preset)
    # a random-init arm for every architecture, so that pretraining is judged like for like;
    # NSP and MLM only share the base architecture and its arm
    arms = study.random_init_arms(preset)
    assert sorted(arms) == sorted(["random-init", "random-init-not-shared"]
                                  + [f"random-init-E{size}" for size in preset["embedding_sizes"] if size != base_e])
    for task in study.TASKS:
        for name in [*names, *arms]:
            assert all(f"finetune-{task}-{name}-seed{seed}" in cells for seed in preset["seeds"])
    assert sum(kind == "heldout" for kind in cells.values()) == 2 * len(names)


def test_the_full_plan_has_the_selection_the_grid_and_on_request_the_tries():
    preset = study.PRESETS["full"]
    grid, cells = preset["efficiency"], study.plan(preset)
    assert grid["sizes"] == [500, None] and len(grid["seeds"]) == 5  # as the pass test says
    assert preset["verdicts"] and not study.PRESETS["smoke"]["verdicts"]
    for arm in study.ARMS:
        for rate in preset["tagging"]["learning_rates"]:
            assert f"select-pos-{arm}-lr{rate:g}" in cells
        for size in ("500", "all"):
            assert all(f"select-sst2-n{size}-{arm}-lr{rate:g}" in cells for rate in grid["learning_rates"])
            assert all(f"efficiency-n{size}-{arm}-seed{seed}" in cells for seed in grid["seeds"])
    assert not any(name in cell for cell in cells for name in tries.TRIES)
    with_tries = study.plan(preset, with_tries=True)
    for name, spec in tries.TRIES.items():
        assert all(f"efficiency-n500-{name}-seed{seed}" in with_tries for seed in grid["seeds"])
        assert (f"pretrain-{name}" in with_tries) == spec["pretrain"]
        assert f"efficiency-nall-{name}-seed1" not in with_tries


def test_a_finished_cell_is_skipped_and_an_interrupted_one_restarts_clean(tmp_path):
    store = study_cells.CellStore(str(tmp_path), {"a": "k", "b": "k"})
    calls = []

    def work(directory):
        calls.append(sorted(os.listdir(directory)))
        return {"value": len(calls)}

    assert store.run("a", work) == {"value": 1}
    leftover = os.path.join(store.cell_dir("b"), "half-written")
    os.makedirs(os.path.dirname(leftover))
    open(leftover, "w").close()
    again = study_cells.CellStore(str(tmp_path), {"a": "k", "b": "k"})
    assert again.run("a", work) == {"value": 1}  # recorded, not rerun
    assert again.run("b", work) == {"value": 2}
    assert calls == [[], []]  # b's leftover was removed before it ran
    assert again.started == ["b"]
    with pytest.raises(ValueError, match="not in the plan"):
        again.run("c", work)


def test_the_eta_counts_the_unmeasured_kinds_apart(tmp_path):
    store = study_cells.CellStore(str(tmp_path), {"a1": "a", "a2": "a", "a3": "a", "b1": "b"})
    assert store.eta() == "unknown until a cell has run"
    store.seconds = {"a1": 10.0}
    # two more of kind a at 10 s, and b, not yet timed, at the mean timed cell (10 s)
    assert store.eta() == "0:00:30 (rough: 1 cell(s) of kinds not yet timed counted at the mean timed cell)"


def test_the_eta_counts_a_kind_not_yet_timed_by_its_tokens(tmp_path):
    store = study_cells.CellStore(str(tmp_path), {"d": "data", "p1": "pretrain", "p2": "pretrain",
                                             "f1": "finetune", "f2": "finetune"},
                                  workers=2, work_by_kind={"pretrain": 4000, "finetune": 400})
    store.seconds = {"d": 5.0, "p1": 300.0}  # 300 s for 4,000 tokens: 0.075 s a token
    # p2 at its kind's 300 s, f1 and f2 at 400 tokens x 0.075 s = 30 s each; two at a time
    assert store.eta() == ("0:03:00 (estimated: 2 cell(s) of kinds not yet timed counted by their "
                           "tokens at the seconds per token measured so far)")
    assert set(study.work_by_kind(study.PRESETS["full"])) == {
        kind for kind in study.plan(study.PRESETS["full"], with_tries=True).values()
        if not kind.startswith("data-")}


def test_a_resumed_run_counts_the_recorded_cells_as_done(tmp_path):
    store = study_cells.CellStore(str(tmp_path), {"a1": "a", "a2": "a"})
    store.run("a1", lambda directory: {})
    resumed = study_cells.CellStore(str(tmp_path), {"a1": "a", "a2": "a"})
    assert set(resumed.seconds) == {"a1"} and "not yet timed" not in resumed.eta()


def _measurements(sop_heldout, nsp_heldout, scores):
    """Synthetic measurements: `sop_heldout`/`nsp_heldout`: {model: head accuracy on held-out
    SOP / NSP pairs}; `scores`: {model: [accuracies]} for both tasks."""
    models = {}
    for name, embedding, groups, count in (("base", 64, 1, 100), ("nsp", 64, 1, 100),
                                           ("mlm-only", 64, 1, 100), ("not-shared", 64, 4, 300),
                                           ("E32", 32, 1, 80), ("E128", 128, 1, 140)):
        models[name] = {"label": name, "parameters": count,
                        "config": {"embedding_size": embedding, "num_hidden_groups": groups},
                        "heldout": {"sop": {"sentence_order_accuracy": sop_heldout.get(name, 0.5),
                                            "masked_lm_accuracy": 0.2},
                                    "nsp": {"sentence_order_accuracy": nsp_heldout.get(name, 0.5),
                                            "masked_lm_accuracy": 0.2}}}
    finetuning = {task: {name: scores.get(name, [0.6, 0.62, 0.64]) for name in [*models, "random-init"]}
                  for task in ("sst2", "pos")}
    return {"preset": "test", "settings": {"seeds": [1, 2, 3]}, "models": models,
            "random_init_parameters": 100, "finetuning": finetuning,
            "baselines": {"sst2": {"majority_label": 0.55},
                          "pos": {"most_frequent_tag_per_word": 0.86, "majority_tag": 0.155}},
            "selection": {"pos": {"base": {"scores": {"0.001": 0.8, "0.003": 0.7}, "chosen": 0.001},
                                  "random-init": {"scores": {"0.001": 0.6, "0.003": 0.75}, "chosen": 0.003}}},
            "efficiency": {"500": {"base": [0.55, 0.60, 0.62, 0.64, 0.63],
                                   "random-init": [0.55, 0.55, 0.58, 0.60, 0.551],
                                   "tapt": [0.60, 0.60, 0.62, 0.64, 0.66]},
                           "all": {"base": [0.7, 0.7, 0.7, 0.7, 0.7],
                                   "random-init": [0.71, 0.72, 0.70, 0.73, 0.74]}},
            "tries": None,
            "pairs": {form: {"heldout": {"label_1_fraction": 0.4, "swapped": 3, "random_document": 1,
                                         "in_order": 6}} for form in ("sop", "nsp")},
            "seconds": {"this_run_wall": 60, "all_cells": 120, "cells": {}}}


def _verdicts(measurements):
    """{claim without its bracketed reference: verdict}."""
    return {re.sub(r" \([^)]*\)", "", f["claim"]): f["verdict"] for f in study_report.findings(measurements)}


def test_the_verdict_rule_uses_the_t_distribution_at_the_number_of_seeds():
    # held-out accuracies (binomial error): the normal 1.96
    assert verdicts.verdict(0.0197, 0.01) == verdicts.REPRODUCED
    assert verdicts.verdict(0.0195, 0.01) == verdicts.NOT_RESOLVED
    assert verdicts.verdict(-0.0197, 0.01) == verdicts.NOT_REPRODUCED
    # paired seeds: t at n - 1 degrees of freedom, 4.303 at 3 seeds and 2.776 at 5 (the
    # tables' values); two standard errors no longer decide at 3 seeds
    assert verdicts.critical_value(3) == pytest.approx(4.303, abs=1e-3)
    assert verdicts.critical_value(5) == pytest.approx(2.776, abs=1e-3)
    assert verdicts.verdict(0.021, 0.01, seeds=3) == verdicts.NOT_RESOLVED
    assert verdicts.verdict(0.044, 0.01, seeds=3) == verdicts.REPRODUCED
    assert verdicts.verdict(0.028, 0.01, seeds=5) == verdicts.REPRODUCED
    assert verdicts.verdict(-0.028, 0.01, seeds=5) == verdicts.NOT_REPRODUCED
    # no spread to judge by: one seed, or identical per-seed differences (SE 0)
    assert verdicts.verdict(0.5, None) == verdicts.NOT_RESOLVED
    assert verdicts.verdict(0.5, 0.0, seeds=3) == verdicts.NOT_RESOLVED
    assert verdicts.verdict(0.5, 0.1, seeds=1) == verdicts.NOT_RESOLVED
    same = verdicts.compare([0.65, 0.66, 0.67], [0.60, 0.61, 0.62])  # +5 points on every seed
    assert same["gain"] == pytest.approx(0.05) and same["se"] == pytest.approx(0.0, abs=1e-12)
    assert same["verdict"] == verdicts.NOT_RESOLVED
    one = verdicts.compare([0.7], [0.6])
    assert one["se"] is None and one["verdict"] == verdicts.NOT_RESOLVED
    # differences 0.02, 0.00, 0.04: mean 0.02, sd 0.02, SE 0.02/sqrt(3) = 0.0115
    comparison = verdicts.paired([0.62, 0.60, 0.64], [0.60, 0.60, 0.60])
    assert comparison["gain"] == pytest.approx(0.02) and comparison["positive"] == 2
    assert comparison["se"] == pytest.approx(0.02 / 3 ** 0.5)
    assert verdicts.binomial_se(0.5, 100) == pytest.approx(0.05)
    with pytest.raises(ValueError, match="same seeds"):
        verdicts.paired([0.6, 0.7], [0.6])


def test_collapsed_runs_leave_the_mean_and_the_error_and_are_counted():
    rates = verdicts.one_class_rates(0.54)  # 54% one label, 46% the other
    assert verdicts.collapsed(0.544, rates) and verdicts.collapsed(0.456, rates)
    assert not verdicts.collapsed(0.546, rates) and not verdicts.collapsed(0.70, rates)
    # the gain rests on three random-init runs stuck at the majority label
    pretrained = [0.62, 0.63, 0.64, 0.63, 0.61]
    random_init = [0.54, 0.54, 0.541, 0.62, 0.60]
    comparison = verdicts.compare(pretrained, random_init, rates)
    assert comparison["collapsed"] == {"better": 0, "worse": 3} and comparison["n"] == 2
    assert comparison["gain"] == pytest.approx(0.01)  # seeds 4 and 5 only: +1 point each, SE 0
    assert comparison["verdict"] == verdicts.NOT_RESOLVED
    counted = comparison["with_collapses"]
    # with them: +8, +9, +9.9, +1, +1: mean 5.78 against t(4) x SE = 2.776 x 1.97 = 5.48
    assert counted["gain"] == pytest.approx(0.0578) and counted["verdict"] == verdicts.REPRODUCED
    assert comparison["verdict_changes"]
    assert "left out: collapsed runs 0 / 3" in verdicts.describe(comparison)
    assert "which would read REPRODUCED" in verdicts.describe(comparison)
    everything = verdicts.compare([0.54, 0.46], [0.54, 0.54], rates)
    assert everything["n"] == 0 and everything["gain"] is None
    assert everything["verdict"] == verdicts.NOT_RESOLVED
    assert verdicts.points(None, None) == "n/a"


def test_pretraining_is_judged_against_random_init_of_the_same_architecture():
    scores = {"E128": [0.80, 0.81, 0.82], "base": [0.70, 0.70, 0.70], "random-init": [0.60, 0.61, 0.62]}
    found = {f["claim"]: f for f in study_report.findings(_measurements({}, {}, scores))}
    e128 = found["pretraining beats random init: E128, pos"]
    assert e128["verdict"] == verdicts.NOT_MEASURABLE and "architecture" in e128["detail"]
    assert found["pretraining beats random init: not-shared, sst2"]["verdict"] == verdicts.NOT_MEASURABLE
    assert found["pretraining beats random init: base, pos"]["verdict"] == verdicts.REPRODUCED
    # with a random-init arm of E=128 the comparison is like for like, and the architecture's
    # own effect is a finding of its own
    measurements = _measurements({}, {}, scores)
    for by_model in measurements["finetuning"].values():
        by_model["random-init-E128"] = [0.80, 0.80, 0.80]
    found = {f["claim"]: f for f in study_report.findings(measurements)}
    assert found["pretraining beats random init: E128, pos"]["verdict"] == verdicts.NOT_RESOLVED
    architecture = ("architecture alone, both from random init: E128 against the base architecture "
                    "(positive: it fine-tunes better), pos")
    assert found[architecture]["verdict"] == verdicts.REPRODUCED
    text = study_report.markdown(measurements, study_report.tables(measurements),
                                 study_report.findings(measurements), _cpu())
    assert "| random initialisation (E128) | 140 |" in text


def _cpu():
    return {"model": "test CPU", "cores": 2, "isa": {"avx2": True}}


def test_a_constant_sentence_pair_head_cannot_pass():
    # majority label 60% on both forms; the NSP-trained head answers the majority label on
    # both: it learnt nothing, and its near-chance SOP accuracy proves nothing
    constant = {f["claim"]: f for f in study_report.findings(_measurements(
        {"base": 0.99, "nsp": 0.60}, {"nsp": 0.60, "base": 0.99}, {}))}
    own = constant["NSP-trained solves held-out NSP pairs above the majority label (Table 6: 90.5%)"]
    assert own["verdict"] == verdicts.NOT_RESOLVED
    contrast = constant["NSP-trained solves NSP pairs but not SOP pairs (Table 6: 90.5% against 52.0%)"]
    assert contrast["verdict"] == verdicts.NOT_MEASURABLE and "learnt nothing" in contrast["detail"]
    learnt = {f["claim"]: f for f in study_report.findings(_measurements(
        {"base": 0.99, "nsp": 0.60}, {"nsp": 0.99, "base": 0.99}, {}))}
    assert learnt["NSP-trained solves NSP pairs but not SOP pairs (Table 6: 90.5% against 52.0%)"][
        "verdict"] == verdicts.REPRODUCED
    assert not any("near chance" in claim for claim in learnt)


def test_findings_follow_the_measured_numbers_and_their_spread():
    # 10 held-out pairs: binomial SE about 0.15, so only large held-out differences decide
    as_paper = _verdicts(_measurements(
        {"base": 0.99, "nsp": 0.60}, {"base": 0.99, "mlm-only": 0.5},
        {"base": [0.8, 0.81, 0.82], "nsp": [0.7, 0.7, 0.71], "random-init": [0.5, 0.5, 0.52]}))
    assert as_paper["SOP-trained beats NSP-trained on held-out SOP pairs"] == verdicts.REPRODUCED
    assert as_paper["SOP-trained solves held-out NSP pairs above the majority label"] == verdicts.REPRODUCED
    assert as_paper["not-shared has more parameters than all-shared"] == verdicts.REPRODUCED
    assert as_paper["a smaller E gives fewer parameters"] == verdicts.REPRODUCED
    assert as_paper["SOP fine-tunes better than NSP, sst2"] == verdicts.REPRODUCED
    assert as_paper["pretraining beats random init: base, pos"] == verdicts.REPRODUCED

    against = _verdicts(_measurements(
        {"base": 0.3, "nsp": 0.99}, {"base": 0.2, "mlm-only": 0.99},  # majority label: 60%
        {"base": [0.5, 0.5, 0.51], "nsp": [0.7, 0.7, 0.7], "random-init": [0.6, 0.6, 0.6]}))
    assert against["SOP-trained beats NSP-trained on held-out SOP pairs"] == verdicts.NOT_REPRODUCED
    assert against["SOP-trained solves held-out NSP pairs above the majority label"] == verdicts.NOT_REPRODUCED
    assert against["SOP fine-tunes better than NSP, sst2"] == verdicts.NOT_REPRODUCED
    assert against["pretraining beats random init: base, sst2"] == verdicts.NOT_REPRODUCED

    # the means differ by 3 points but the paired differences (+13, -7, +3) spread more: SE 5.8
    within = _verdicts(_measurements(
        {"base": 0.62, "nsp": 0.58}, {"base": 0.62},
        {"base": [0.73, 0.53, 0.63], "random-init": [0.60, 0.60, 0.60]}))
    assert within["pretraining beats random init: base, sst2"] == verdicts.NOT_RESOLVED
    assert within["SOP-trained beats NSP-trained on held-out SOP pairs"] == verdicts.NOT_RESOLVED
    # MLM only's untrained head is no reference: its accuracy decides nothing
    assert _verdicts(_measurements({}, {"base": 0.99, "mlm-only": 0.0}, {})) == _verdicts(
        _measurements({}, {"base": 0.99, "mlm-only": 1.0}, {}))


def test_the_smoke_report_prints_no_verdict_word(tmp_path):
    measurements = _measurements({"base": 0.99, "nsp": 0.5}, {}, {"random-init": [0.1, 0.1, 0.1]})
    full = study_report.write(measurements, str(tmp_path / "full"))["markdown"]
    assert verdicts.REPRODUCED in full and "Verdict rule" in full
    measurements["settings"] = dict(study.PRESETS["smoke"], seeds=[1, 2, 3])
    smoke = study_report.write(measurements, str(tmp_path / "smoke"))["markdown"]
    for word in ("reproduced", "not resolved", "verdict rule"):
        assert word not in smoke.lower(), word
    assert "pretraining beats random init: base, sst2: 62.0 vs 10.0" in smoke


def test_the_report_has_every_table_row_and_a_picture(tmp_path):
    measurements = _measurements({"base": 0.8}, {}, {})
    report = study_report.write(measurements, str(tmp_path))
    text = report["markdown"]
    for row in ("| 32 |", "| 64 (base) |", "| 128 |", "| all-shared (base) |", "| not-shared |",
                "| MLM only |", "| NSP |", "| SOP (base) |", "random initialisation",
                "| majority label (no model) |  | 60.0 | 60.0 |", "10 = 6 in order (label 0), 3 swapped"):
        assert row in text, row
    assert "62.0 ± 2.0 (+0.0 ± 0.0)" in text  # mean ± sample std over seeds, paired gain ± SE
    assert "model name" not in text and "Machine: " in text
    with open(report["paths"]["png"], "rb") as reader:
        assert reader.read(8) == b"\x89PNG\r\n\x1a\n"
    with open(report["paths"]["json"]) as reader:
        assert len(json.load(reader)["findings"]) == len(study_report.findings(measurements))


def _study(*flags, timeout=1800):
    return subprocess.run([sys.executable, "-m", "albert_tf.demo.study", *flags], cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=timeout)


def test_bad_flags_are_refused_with_one_line(tmp_path):
    result = _study("--preset=huge", f"--output_dir={tmp_path}")
    assert result.returncode == 2 and "--preset" in result.stderr
    other = tmp_path / "other"
    other.mkdir()
    (other / study.SETTINGS_FILE).write_text(json.dumps({"preset": "full", "settings": {}}))
    result = _study("--preset=smoke", f"--output_dir={other}", "--data_dir=/nonexistent")
    assert result.returncode == 2, result.stderr[-2000:]
    assert "holds a study with other settings" in result.stderr


@pytest.mark.slow
def test_the_smoke_study_runs_every_cell_and_a_rerun_starts_none(real_data, tmp_path):
    data_dir = os.path.dirname(real_data["botchan"])
    output_dir = str(tmp_path / "study")
    first = _study(f"--data_dir={data_dir}", f"--output_dir={output_dir}", "--preset=smoke")
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    for script in ("build_vocab.py", "create_pretraining_data.py", "run_pretraining.py",
                   "run_classifier.py", "run_tagging.py"):
        assert f" {script} " in first.stdout, f"{script} was not shown as a command"
    assert "--random_next_sentence" in first.stdout and "--allow_random_init" in first.stdout
    for word in ("REPRODUCED", "not resolved", "PASSES", "fails the test"):
        assert word not in first.stdout, word  # the smoke preset's numbers get no verdict
    plan = study.plan(study.PRESETS["smoke"])
    assert sorted(os.listdir(os.path.join(output_dir, "cells"))) == sorted(f"{n}.json" for n in plan)
    with open(os.path.join(output_dir, "study.json")) as reader:
        result = json.load(reader)
    assert sorted(result["cells_run_now"]) == sorted(plan)
    params = {name: model["parameters"] for name, model in result["models"].items()}
    assert params["not-shared"] > params["base"] and params["base"] < params["E128"]
    for model in result["models"].values():
        for form in ("sop", "nsp"):
            assert 0 <= model["heldout"][form]["sentence_order_accuracy"] <= 1
    for by_model in result["finetuning"].values():
        assert all(len(scores) == len(study.PRESETS["smoke"]["seeds"]) for scores in by_model.values())
    grid = study.PRESETS["smoke"]["efficiency"]
    assert list(result["efficiency"]) == [str(size) for size in grid["sizes"]]
    assert all(len(scores) == len(grid["seeds"]) for scores in result["efficiency"]["50"].values())
    assert set(result["selection"]) == {"pos", "sst2-n50"}
    assert 0.5 < result["baselines"]["pos"]["most_frequent_tag_per_word"] < 1
    with open(os.path.join(output_dir, "study.md")) as reader:
        text = reader.read()
    for row in ("| 32 (base) |", "| 128 |", "| not-shared |", "| MLM only |", "| NSP |",
                "| SOP (base) |", "random initialisation", "avx2 "):
        assert row in text, row

    os.remove(os.path.join(output_dir, "cells", "finetune-pos-random-init-seed1.json"))
    second = _study(f"--data_dir={data_dir}", f"--output_dir={output_dir}", "--preset=smoke")
    assert second.returncode == 0, second.stdout[-3000:] + second.stderr[-3000:]
    with open(os.path.join(output_dir, "study.json")) as reader:
        assert json.load(reader)["cells_run_now"] == ["finetune-pos-random-init-seed1"]
    assert second.stdout.count("\n$ ") == 1 and "removing" in second.stdout


def test_the_report_prints_baselines_selection_the_efficiency_grid_and_the_tries(tmp_path):
    measurements = _measurements({}, {}, {})
    text = study_report.write(measurements, str(tmp_path))["markdown"]
    assert "| majority label / tag (no model) |  | 55.0 | 15.5 |" in text
    assert "| most frequent tag per word (no model) |  |  | 86.0 |" in text
    assert "| pos | random-init | 0.001: 60.0, 0.003: 75.0 | 0.003 |" in text
    # 500: differences 0, 5, 4, 4, 7.9 -> mean 4.18; three random-init runs within half a point
    # of the 55% majority rate, one pretrained (none near the minority's 45%)
    # of 55%, one pretrained: seeds 1, 2 and 5 leave; the +4.2 with them counted rested on them
    assert ("| 500 | 62.2 ± 1.7 (1 collapsed) | 59.0 ± 1.4 (3 collapsed) | +4.0 ± 0.0 | 2/2 | 1 / 3 "
            "| +4.2 ± 1.3, REPRODUCED |") in text
    assert "| all | 70.0 ± 0.0 | 72.0 ± 1.6 | -2.0 ± 0.7 | 0/5 | 0 / 0 | -2.0 ± 0.7, NOT REPRODUCED |" in text
    findings = {f["claim"]: f["verdict"] for f in study_report.findings(measurements)}
    # SE 0 on the two seeds left: not resolved (it read REPRODUCED before issue 50)
    assert findings["pretraining beats random init at 500 training sentences (paired subsets)"] == verdicts.NOT_RESOLVED
    assert findings["pretraining beats random init at all training sentences (paired subsets)"] == verdicts.NOT_REPRODUCED
    assert tries.PASS_TEST_TEXT in text and "(a) task-adaptive pretraining" in text
    assert text.count("not run (`--tries` runs it)") == len(tries.TRIES)
    measurements["tries"] = sorted(tries.TRIES)
    text = study_report.write(measurements, str(tmp_path))["markdown"]
    # tapt - random init: +5, +5, +4, +4, +10.9, but three random-init runs collapsed: fails
    assert "- fails the test: (a) task-adaptive pretraining" in text
    assert "left out: collapsed runs 0 / 3" in text
    assert text.count("not run (`--tries` runs it)") == len(tries.TRIES) - 1


def test_a_try_passes_only_with_three_points_and_four_positive_seeds():
    by_arm = {"random-init": [0.6] * 5}
    assert tries.passes(dict(by_arm, t=[0.64, 0.64, 0.64, 0.64, 0.59]), "t", 0.54)[0]
    assert not tries.passes(dict(by_arm, t=[0.7, 0.7, 0.7, 0.59, 0.59]), "t", 0.54)[0]  # 3 of 5 positive
    assert not tries.passes(dict(by_arm, t=[0.629] * 5), "t", 0.54)[0]  # +2.9 points
    # a gain resting on collapsed runs, in either arm, fails
    assert not tries.passes({"random-init": [0.54, 0.6, 0.6, 0.6, 0.6], "t": [0.64] * 5}, "t", 0.54)[0]
    assert not tries.passes({"random-init": [0.6] * 5, "t": [0.64] * 4 + [0.46]}, "t", 0.54)[0]


def test_tagging_baselines_and_paired_subsets(tmp_path):
    (tmp_path / "train.txt").write_text("the at\ndog nn\nruns vbz\n\nthe at\nruns nn\nruns vbz\n")
    (tmp_path / "dev.txt").write_text("Dog nn\nruns vbz\ncat at\nsits vbz\n")
    found = baselines.tagging_baselines(str(tmp_path / "train.txt"), str(tmp_path / "dev.txt"))
    # per word, looked up lower-cased as the model sees it: Dog->nn, runs->vbz (2 of 3), unseen
    # cat/sits -> the majority tag (at: 2, nn: 2, vbz: 2; the first counted wins): 3 of 4
    # right; majority tag: 1 of 4
    assert found == {"most_frequent_tag_per_word": 0.75, "majority_tag": 0.25, "tags": 3}
    exact = baselines.tagging_baselines(str(tmp_path / "train.txt"), str(tmp_path / "dev.txt"),
                                        lower_case=False)
    assert exact["most_frequent_tag_per_word"] == 0.5  # `Dog` unseen by its exact form
    pos = tmp_path / "data" / "brown_pos"
    pos.mkdir(parents=True)
    (pos / "train.txt").write_text((tmp_path / "train.txt").read_text())
    (pos / "dev.txt").write_text((tmp_path / "dev.txt").read_text() + "\nextra at\n")
    written = tmp_path / "baselines.json"
    baselines.main([f"--data_dir={tmp_path / 'data'}", "--dev_sentences=1", f"--output={written}"])
    result = json.loads(written.read_text())  # the first dev sentence only: the extra one left out
    assert result["lower_cased"]["most_frequent_tag_per_word"] == 0.75
    assert result["exact_form"]["most_frequent_tag_per_word"] == 0.5 and result["dev_sentences"] == 1
    (tmp_path / "bad.txt").write_text("the\n")
    with pytest.raises(ValueError, match=r"bad\.txt:1: expected `word tag`"):
        baselines.read_tagged(str(tmp_path / "bad.txt"))

    task = tmp_path / "SST-2"
    task.mkdir()
    rows = [f"sentence {i}\t{i % 3 == 0:d}" for i in range(20)]
    (task / "train.tsv").write_text("sentence\tlabel\n" + "\n".join(rows) + "\n")
    (task / "dev.tsv").write_text("sentence\tlabel\nd\t1\nd\t0\nd\t0\n")
    assert baselines.majority_label_rate(str(task / "dev.tsv")) == pytest.approx(2 / 3)
    one = efficiency.write_subset(str(task), str(tmp_path / "a"), 5, 1)
    again = efficiency.write_subset(str(task), str(tmp_path / "b"), 5, 1)
    assert (tmp_path / "a" / "train.tsv").read_text() == (tmp_path / "b" / "train.tsv").read_text()
    assert one.endswith("a") and again.endswith("b")
    picked = (tmp_path / "a" / "train.tsv").read_text().splitlines()
    assert picked[0] == "sentence\tlabel" and len(picked) == 6 and set(picked[1:]) <= set(rows)
    assert (tmp_path / "a" / "dev.tsv").read_text() == (task / "dev.tsv").read_text()
    efficiency.write_subset(str(task), str(tmp_path / "select"), 5, 0, dev_rows=4)
    dev = (tmp_path / "select" / "dev.tsv").read_text().splitlines()[1:]
    train = (tmp_path / "select" / "train.tsv").read_text().splitlines()[1:]
    assert dev == rows[-4:] and not set(train) & set(dev)  # the slice is never trained on
    # a run answering one class scores the majority rate or the minority's: both collapsed
    summary = efficiency.summary([0.539, 0.461, 0.466, 0.70], [0.6, 0.6, 0.6, 0.6], 0.539)
    assert summary["collapsed"] == {"pretrained": 2, "random_init": 0} and summary["kept_seeds"] == 2
    with pytest.raises(ValueError, match="fewer than the 50 asked"):
        efficiency.write_subset(str(task), str(tmp_path / "c"), 50, 1)


def test_the_pretraining_text_leaves_out_the_tagging_dev_and_test_documents(real_data):
    shards = real_data["brown"]
    kept = data_sources.shards_without_tagging_eval(shards)
    assert len(kept) == 8 and shards[8] not in kept and shards[9] not in kept
    first_dev = baselines.read_tagged(real_data["brown_tagging"]["pos"]["dev"])[0]
    words = [word for word, _ in first_dev][:8]
    sentence = data_sources.brown_sentence(" ".join(f"{word}/x" for word in words))
    assert sentence in open(shards[8]).read()
    assert all(sentence not in open(path).read() for path in kept)
    full = study.PRESETS["full"]
    assert full["train_shards"] == len(kept)
