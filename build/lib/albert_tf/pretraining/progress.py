"""Progress lines for the log: files, documents, instances, instances/s and ETA.

The ETA weighs each input file by its size in bytes: a file counts as done in proportion to
the dupe passes (and documents within a pass) it has completed.
"""

import datetime
import time

from absl import logging


class Progress:
    def __init__(self, file_sizes, interval_seconds, clock=time.monotonic):
        self.file_sizes = file_sizes
        self.total_bytes = float(sum(file_sizes)) or 1.0
        self.interval_seconds = interval_seconds
        self.clock = clock
        self.start = clock()
        self._last_log = self.start
        self.fraction = [0.0] * len(file_sizes)
        self.documents = [0] * len(file_sizes)
        self.instances = 0
        self.files_done = 0

    def chunk(self, file_index, num_records, fraction, num_documents):
        self.instances += num_records
        self.fraction[file_index] = fraction
        self.documents[file_index] = num_documents
        now = self.clock()
        if now - self._last_log >= self.interval_seconds:
            self._last_log = now
            logging.info("%s", self.line(now))

    def file_done(self, file_index):
        self.fraction[file_index] = 1.0
        self.files_done += 1

    def done_fraction(self):
        return sum(size * fraction for size, fraction in zip(self.file_sizes, self.fraction)
                   ) / self.total_bytes

    def line(self, now=None):
        now = self.clock() if now is None else now
        elapsed = max(now - self.start, 1e-9)
        done = self.done_fraction()
        eta = (elapsed * (1.0 - done) / done) if done > 0 else None
        eta_text = str(datetime.timedelta(seconds=round(eta))) if eta is not None else "?"
        return (f"files {self.files_done}/{len(self.file_sizes)}, "
                f"documents {sum(self.documents):,}, instances {self.instances:,}, "
                f"{self.instances / elapsed:,.0f} instances/s, {done:.1%} done, ETA {eta_text}")
