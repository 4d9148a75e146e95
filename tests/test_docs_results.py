"""The documents' measured figures come from committed results files (albert_tf/demo/docs_results.py):
every rendered block is current, and every measured-looking number outside the blocks is found
in a source the document names (`<!-- sources: ... -->`).
"""

import glob
import json
import os
import re

import pytest

from albert_tf.demo import docs_results
from tests.conftest import REPO_ROOT

# What looks like a measurement: a value ± its error, a percentage, a ratio, an accuracy of
# three or more decimals, a duration.
_MEASURED = re.compile(
    r"(?P<pm>[+−-]?\d+(?:\.\d+)? ± \d+(?:\.\d+)?)"
    r"|(?P<percent>\d+(?:\.\d+)?%)"
    r"|(?P<ratio>\d+\.\d+×)"
    r"|(?P<accuracy>\b0\.\d{3,}\b)"
    r"|(?P<duration>\b\d+(?:\.\d+)? (?:s|ms|min|minutes)\b)")
_NUMBER = re.compile(r"[+−-]?\d[\d,]*(?:\.\d+)?")
# Numbers of the documents that look measured but are settings or definitions, each with why.
NOT_MEASURED = {
    "docs/demo.md": {"10%": "the recipe's warm-up share", "5%": "the CPU check's threshold (a setting)",
                     "40%": "try (b)'s masking rate (a setting)", "95%": "the verdict rule's confidence level"},
    "docs/paper_study.md": {"40%": "try (b)'s masking rate (a setting)",
                            "95%": "the verdict rule's confidence level"},
    "README.md": {},
    "docs/fine_tuning.md": {"30 s": "the progress lines' interval (a setting)",
                            "18%": "a sample progress line, quoted for its layout"},
    "bench/RESULTS.md": {},
}


def _text(document):
    with open(os.path.join(REPO_ROOT, document), encoding="utf-8") as reader:
        return reader.read()


@pytest.mark.parametrize("document", docs_results.RENDERED)
def test_every_rendered_block_is_current(document):
    text = _text(document)
    assert docs_results.render(text, document) == text, (
        f"{document}: a results block is stale; run `make docs`")


def _sources(document, text):
    match = re.search(r"<!-- sources: (.+?) -->", text)
    assert match, f"{document}: no `<!-- sources: ... -->` line naming its results files"
    paths = []
    for pattern in match.group(1).split(","):
        found = glob.glob(os.path.join(REPO_ROOT, pattern.strip()))
        assert found, f"{document}: source {pattern.strip()!r} matches no committed file"
        paths += found
    return paths


def _numbers(value):
    """Every number in a JSON value, those inside its strings included."""
    if isinstance(value, bool):
        return []
    if isinstance(value, (int, float)):
        return [float(value)]
    if isinstance(value, str):
        return [float(n.replace(",", "").replace("−", "-")) for n in _NUMBER.findall(value)]
    if isinstance(value, dict):
        return [n for key, item in value.items() for n in _numbers(key) + _numbers(item)]
    if isinstance(value, list):
        return [n for item in value for n in _numbers(item)]
    return []


def _found(token, numbers):
    """Whether the number `token` (as printed) is one of `numbers`, as printed or as a percentage."""
    printed = token.replace(",", "").replace("−", "-").lstrip("+")
    value = abs(float(printed))
    decimals = len(printed.split(".")[1]) if "." in printed else 0
    tolerance = 0.5 * 10 ** -decimals + 1e-9
    return any(abs(abs(n) - value) <= tolerance or abs(abs(100 * n) - value) <= tolerance for n in numbers)


def _prose(text):
    """The text outside results blocks, fenced code, inline code and HTML comments."""
    text = docs_results.BLOCK.sub("", text)
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    text = re.sub(r"`[^`\n]*`", "", text)
    return re.sub(r"<!--.*?-->", "", text, flags=re.S)


def measured_numbers(text):
    """[(the token as written, [its numbers])] of the measured-looking figures of `text`."""
    found = []
    for match in _MEASURED.finditer(_prose(text)):
        token = match.group(0)
        found.append((token, _NUMBER.findall(token)))
    return found


@pytest.mark.parametrize("document", docs_results.DOCUMENTS)
def test_every_measured_number_outside_the_blocks_is_in_its_source(document):
    text = _text(document)
    numbers = []
    for path in _sources(document, text):
        with open(path, encoding="utf-8") as reader:
            numbers += _numbers(json.load(reader))
    exempt = NOT_MEASURED[document]
    missing = [token for token, parts in measured_numbers(text)
               if token not in exempt and not all(_found(part, numbers) for part in parts)]
    assert not missing, f"{document}: figures found in none of its sources: {missing}"


def test_the_check_catches_a_stale_number_and_a_stale_block():
    numbers = _numbers({"gain": -0.0072, "text": "paired gain -0.7 ± 0.3 points", "seconds": 254})
    assert _found("-0.7", numbers) and _found("254", numbers) and _found("0.72", numbers)
    assert not _found("-2.2", numbers)  # a superseded run's figure
    assert [token for token, _ in measured_numbers(
        "paired −2.2 ± 0.7, 0.605 and six minutes; `--learning_rate=0.01`; 349 s\n")] == [
        "−2.2 ± 0.7", "0.605", "349 s"]
    text = "<!-- results:paper-minutes -->1.0 minutes wall<!-- /results -->"
    assert docs_results.render(text) != text  # the source says otherwise: stale
    with pytest.raises(ValueError, match="unknown results block 'nope'"):
        docs_results.render("<!-- results:nope --><!-- /results -->", "x.md")


def test_rounded_verdicts_say_when_the_rounding_decides():
    # -0.4 ± 0.1 at 3 seeds: 4.30 x [0.05, 0.15] spans 0.35-0.45 around the gain
    assert "at the edge" in docs_results.rounded_verdict(-0.4, 0.1, 3)
    assert docs_results.rounded_verdict(4.6, 0.7, 3) == "REPRODUCED"
    assert docs_results.rounded_verdict(-0.7, 0.3, 3) == "not resolved"


def test_a_summary_json_of_make_demo_renders_with_its_collapses_and_verdicts(tmp_path, monkeypatch):
    from albert_tf.demo import efficiency, pipeline
    majority = 0.54
    cells = {"all": efficiency.summary([0.74, 0.75, 0.73], [0.75, 0.76, 0.74], majority),
             "500": efficiency.summary([0.541, 0.60, 0.62], [0.63, 0.64, 0.62], majority)}
    summary = {"cpu": {"model": "Test CPU", "cores": 2, "isa": {"avx2": True, "amx": False},
                       "precision": "float32", "cpu_replicas": 1},
               "pretraining_eval": {"masked_lm_accuracy": 0.1426, "sentence_order_accuracy": 0.6137,
                                    "global_step": 2000},
               "fine_tuning_eval": {"eval_accuracy": 0.7267},
               "pretraining_gain": pipeline.pretraining_gain("eval_accuracy", [0.74, 0.75, 0.73],
                                                             [0.75, 0.76, 0.74], majority),
               "data_efficiency": {size: dict(cell, fine_tuning_steps=steps)
                                   for (size, cell), steps in zip(cells.items(), (500, 200))},
               "seconds": {"pretraining": 254, "total": 504},
               "recipe": {"pretrain_steps": 2000, "pretrain_batch": 64, "max_seq_length": 64}}
    path = tmp_path / "summary.json"
    path.write_text(json.dumps(summary))
    monkeypatch.setattr(docs_results, "DEMO", str(path))
    text = docs_results.render_demo_summary("")
    assert "Test CPU, 2 cores; avx2; no amx" in text and "Seconds: pretraining 254, total 504." in text
    assert "masked-LM accuracy 0.143, sentence order 0.614" in text
    assert "| all | 500 | 74.0 | 75.0 | -1.0 ± 0.0 | 0/3 | 0 / 0 | not resolved |" in text  # SE 0
    # seed 1's pretrained run sits at the majority rate: left out, the rest judged
    assert "| 500 | 200 | 61.0 | 63.0 | -2.0 ± 2.0 | 0/2 | 1 / 0 | not resolved |" in text
    assert "pretraining's own variance is not in them" in text
    assert docs_results.render_demo_compute("").startswith("8.19 M tokens in 254 s")


def test_a_benchmark_writes_the_results_file_the_current_figures_render_from(tmp_path, monkeypatch):
    import importlib.util
    spec = importlib.util.spec_from_file_location("bench_machine", os.path.join(REPO_ROOT, "bench", "machine.py"))
    bench_machine = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench_machine)
    monkeypatch.setattr(bench_machine, "LOAD_BEFORE", 0.0)
    table = [bench_machine.row("step", "ours", 1.23, "s", "the reference", 1.0)]
    path = bench_machine.write_results("toy", "a toy workload", table, lambda entry: True, {"runs": 3},
                                       results_dir=str(tmp_path))
    with open(path, encoding="utf-8") as reader:
        written = json.load(reader)
    assert {"workload", "figure", "command", "cpu", "isa", "load", "date", "details"} <= set(written)
    assert written["details"] == {"settings": {"runs": 3}, "table": table}
    monkeypatch.setattr(docs_results, "BENCH", str(tmp_path))
    rendered = docs_results.render_bench_current("")
    assert "| a toy workload | step: ours 1.23 s = 1.23× the reference |" in rendered
    assert "(transcribed)" not in rendered
    block = docs_results.render("<!-- results:bench-figure-toy --><!-- /results -->")
    assert block.startswith("<!-- results:bench-figure-toy -->step: ours 1.23 s = 1.23× the reference (`")
    assert f"{written['date']}; `{tmp_path}/toy.json`)<!-- /results -->" in block


def test_a_study_json_of_make_paper_renders_its_tables_and_findings(tmp_path, monkeypatch):
    from albert_tf.demo import study_report, tries
    from tests.test_study import _measurements
    measurements = _measurements({"base": 0.99, "nsp": 0.6}, {"nsp": 0.6}, {})
    measurements.update(command="python -m albert_tf.demo.study --preset=full", date="2026-11-29T10:00Z",
                        load_average_at_start=0.5, note="Run beside the test suite.")
    paths = study_report.write(measurements, str(tmp_path))["paths"]
    monkeypatch.setattr(docs_results, "PAPER", paths["json"])
    text = docs_results.render_paper_study("")
    assert "`python -m albert_tf.demo.study --preset=full` (preset `test`) on 2026-11-29T10:00Z" in text
    assert "load average 0.5 at the start. Run beside the test suite." in text
    assert "#### Table 4 shape: embedding size E (all-shared, SOP)" in text
    assert "- not measurable: pretraining beats random init: E128, sst2" in text
    assert "- not measurable: NSP-trained solves NSP pairs but not SOP pairs" in text
    assert "## Pre-registered" not in text and tries.PASS_TEST_TEXT in text


def test_a_resumed_study_claims_no_wall_time_and_prints_its_note():
    whole = {"seconds": {"this_run_wall": 600, "all_cells": 1080, "cells": {"a": 540, "b": 540}},
             "cells_run_now": ["a", "b"]}
    assert docs_results.study_time(whole) == "10.0 minutes wall, 18.0 minutes of cells (two at a time)"
    resumed = dict(whole, cells_run_now=["b"])
    assert docs_results.study_time(resumed) == (
        "18.0 minutes of cells (two at a time) over more than one invocation; the last ran 1 of the "
        "2 cells in 10.0 minutes wall")
