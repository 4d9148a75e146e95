"""The study's cells: each one step whose result is recorded atomically in
`<output_dir>/cells/<name>.json`, so a rerun skips what is finished.

A cell works in its own directory, `<output_dir>/runs/<name>/`. A cell without a result file
never finished (the run was killed), so its directory is removed before it runs again: the
scripts refuse or resume from a half-finished output directory, and the study wants neither.
Progress is printed as cells done / total with an ETA from the measured times of cells of the
same kind (this run's and those recorded by an earlier one); a kind not yet timed counts at its
tokens of work per cell times the seconds per token measured so far (a pretraining's time
predicts a fine-tuning run's), or, without a work estimate, at the mean timed cell, marked rough.
"""

import datetime
import json
import os
import shutil
import time

from albert_tf.files import io_utils


class CellStore:
    """Runs and records cells."""

    def __init__(self, output_dir, planned, workers=1, work_by_kind=None):
        """`planned`: {name: kind} of every cell of the study (for the total and the ETA; a
        kind groups cells that take about as long); `workers`: how many cells run at once;
        `work_by_kind`: {kind: tokens a cell of it processes} (for the ETA of kinds not yet
        timed; kinds left out do next to no work)."""
        self.workers = workers
        self.work_by_kind = dict(work_by_kind or {})
        self.output_dir = output_dir
        self.cells_dir = os.path.join(output_dir, "cells")
        os.makedirs(self.cells_dir, exist_ok=True)
        io_utils.remove_stale_temporaries(self.cells_dir)
        self.planned = dict(planned)
        self.started = []  # the names of the cells this process ran (not skipped)
        self.seconds = {}  # name -> measured seconds, finished cells only (an earlier run's too)
        for name in self.planned:
            if os.path.exists(self.result_path(name)):
                self.seconds[name] = self._record(name)["seconds"]

    def result_path(self, name):
        return os.path.join(self.cells_dir, f"{name}.json")

    def cell_dir(self, name):
        return os.path.join(self.output_dir, "runs", name)

    def run(self, name, work):
        """`work(cell_dir)` -> a JSON-able dict; returns it, or the recorded one if the cell
        finished before."""
        if name not in self.planned:
            raise ValueError(f"cell {name!r} is not in the plan")
        path = self.result_path(name)
        if os.path.exists(path):
            record = self._record(name)
            self.seconds[name] = record["seconds"]
            return record["result"]
        cell_dir = self.cell_dir(name)
        if os.path.exists(cell_dir):
            print(f"\n--- {name}: removing {cell_dir} (left by an interrupted run)", flush=True)
            shutil.rmtree(cell_dir)
        os.makedirs(cell_dir)
        print(f"\n##### cell {len(self.seconds) + 1}/{len(self.planned)}: {name} "
              f"(ETA of the study {self.eta()})", flush=True)
        self.started.append(name)
        start = time.time()
        result = work(cell_dir)
        seconds = time.time() - start
        io_utils.atomic_write_text(path, json.dumps(
            {"name": name, "seconds": round(seconds, 1), "result": result}, indent=2) + "\n")
        self.seconds[name] = seconds
        print(f"##### cells done {len(self.seconds)}/{len(self.planned)} ({name}: {seconds:.0f} s); "
              f"ETA {self.eta()}", flush=True)
        return result

    def _record(self, name):
        with open(self.result_path(name)) as reader:
            return json.load(reader)

    def eta(self):
        """The remaining cells' time from the mean measured time of each kind. Cells of a kind
        not yet measured count at their work times the seconds per token of the measured cells
        that did work, or at the mean of all measured cells without a work estimate; either
        way the ETA says how many it guessed."""
        by_kind = {}
        for name, seconds in self.seconds.items():
            by_kind.setdefault(self.planned[name], []).append(seconds)
        remaining, unmeasured = 0.0, []
        for name, cell_kind in self.planned.items():
            if name in self.seconds:
                continue
            times = by_kind.get(cell_kind)
            if times:
                remaining += sum(times) / len(times)
            else:
                unmeasured.append(cell_kind)
        if unmeasured and not self.seconds:
            return "unknown until a cell has run"
        timed_work = sum(self.work_by_kind.get(self.planned[name], 0) for name in self.seconds)
        if unmeasured and timed_work:
            per_token = sum(seconds for name, seconds in self.seconds.items()
                            if self.work_by_kind.get(self.planned[name])) / timed_work
            remaining += per_token * sum(self.work_by_kind.get(kind, 0) for kind in unmeasured)
            note = (f" (estimated: {len(unmeasured)} cell(s) of kinds not yet timed counted by their "
                    "tokens at the seconds per token measured so far)")
        elif unmeasured:
            remaining += len(unmeasured) * sum(self.seconds.values()) / len(self.seconds)
            note = (f" (rough: {len(unmeasured)} cell(s) of kinds not yet timed counted at the mean "
                    "timed cell)")
        else:
            note = ""
        return str(datetime.timedelta(seconds=round(remaining / self.workers))) + note

    def total_seconds(self):
        return sum(self.seconds.values())
