"""Test files in order of their measured time, longest first, so two workers end together.

`make test` gives each pytest-xdist worker one file at a time (`--dist loadfile`). By default
xdist hands out the files with the most tests first, which puts the few long end-to-end files
(the smoke study, the quick demo, the kill-and-resume runs) last: one worker then runs them
alone while the other sits idle. With `--no-loadscope-reorder` xdist keeps the collection's
order, and this plugin makes that order longest file first (the classic longest-processing-time
rule), from `file_seconds.json` beside it. A file it does not list counts as a short one.

The table is a schedule, not a result: a stale one only balances the workers less well. Refresh
it from a full run: `pytest -n 2 --dist loadfile --durations=0 tests > log`, then
`python -m tests.longest_first log`.
"""

import collections
import json
import os
import re
import sys

TABLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "file_seconds.json")
_DURATION_LINE = re.compile(r"^([\d.]+)s (?:setup|call|teardown)\s+(tests/[^:\s]+\.py)")


def _file_seconds():
    with open(TABLE, encoding="utf-8") as reader:
        return json.load(reader)


def pytest_collection_modifyitems(session, config, items):
    """Stable: the tests of one file keep their order, files of equal time keep theirs."""
    seconds = _file_seconds()
    order = {}
    for item in items:
        order.setdefault(item.location[0], len(order))
    items.sort(key=lambda item: (-seconds.get(item.location[0], 0.0), order[item.location[0]]))


def seconds_by_file(lines):
    """{tests/file.py: seconds} summed over the setup, call and teardown lines of
    pytest's `--durations=0` report."""
    totals = collections.defaultdict(float)
    for line in lines:
        match = _DURATION_LINE.match(line.strip())
        if match:
            totals[match.group(2)] += float(match.group(1))
    return dict(totals)


def main(log_path):
    with open(log_path, encoding="utf-8", errors="replace") as reader:
        totals = seconds_by_file(reader)
    if not totals:
        raise SystemExit(f"{log_path}: no `--durations=0` lines (e.g. '12.3s call tests/x.py::t')")
    table = {name: round(value, 1) for name, value in sorted(totals.items(), key=lambda kv: -kv[1])}
    temporary = TABLE + ".tmp"
    with open(temporary, "w", encoding="utf-8") as writer:
        json.dump(table, writer, indent=1)
        writer.write("\n")
    os.replace(temporary, TABLE)
    print(f"{TABLE}: {len(table)} files, {sum(table.values()):.0f} s in all")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: python -m tests.longest_first <log of pytest --durations=0>")
    main(sys.argv[1])
