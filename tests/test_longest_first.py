"""The schedule of `make test`: test files longest first, from pytest's own durations report."""

import json
import os

from tests import longest_first
from tests.conftest import REPO_ROOT


def test_a_durations_report_sums_setup_call_and_teardown_by_file():
    report = [
        "============================= slowest 25 durations =============================",
        "604.12s call     tests/test_study.py::test_the_smoke_study_runs_every_cell",
        "403.70s setup    tests/test_run_pretraining.py::test_sigkill_then_resumes",
        "99.56s call     tests/test_run_pretraining.py::test_two_cpu_replicas[a b]",
        "0.50s teardown tests/test_run_pretraining.py::test_two_cpu_replicas[a b]",
        "1302 passed, 11 warnings in 2821.42s (0:47:01)",
    ]
    assert longest_first.seconds_by_file(report) == {
        "tests/test_study.py": 604.12, "tests/test_run_pretraining.py": 503.76}


def test_the_committed_table_names_only_test_files_that_exist():
    with open(longest_first.TABLE, encoding="utf-8") as reader:
        table = json.load(reader)
    assert table and all(seconds > 0 for seconds in table.values())
    missing = [name for name in table if not os.path.isfile(os.path.join(REPO_ROOT, name))]
    assert not missing, f"{longest_first.TABLE} names removed files {missing}: refresh it"


def test_collected_tests_run_longest_file_first_and_keep_their_order_within_a_file(
        tmp_path, monkeypatch):
    table = tmp_path / "file_seconds.json"
    table.write_text('{"tests/test_b.py": 9.0, "tests/test_c.py": 3.0}')
    monkeypatch.setattr(longest_first, "TABLE", str(table))
    order = [("tests/test_a.py", "one"), ("tests/test_b.py", "one"), ("tests/test_c.py", "one"),
             ("tests/test_a.py", "two"), ("tests/test_b.py", "two")]

    class Item:
        def __init__(self, path, name):
            self.location, self.name = (path, 0, name), f"{path}::{name}"

    items = [Item(*pair) for pair in order]
    longest_first.pytest_collection_modifyitems(None, None, items)
    assert [item.name for item in items] == [
        "tests/test_b.py::one", "tests/test_b.py::two", "tests/test_c.py::one",
        "tests/test_a.py::one", "tests/test_a.py::two"]
