"""Progress lines for long work (feature conversion, evaluation, prediction): count, rate, ETA.

A GLUE or SQuAD conversion or a whole-set prediction can take many minutes; without a line now
and then a user cannot tell a slow run from a hung one. A line is logged at most every
`interval_seconds` (and once at the end), so short runs stay quiet and long ones steady.
"""

import datetime
import time

from absl import logging

DEFAULT_INTERVAL_SECONDS = 30.0


def _duration(seconds):
    return str(datetime.timedelta(seconds=round(seconds)))


class ProgressLog:
    """Counts work done towards an optional `total` and logs `what: n/total unit, rate, ETA`."""

    def __init__(self, what, total=None, unit="examples",
                 interval_seconds=DEFAULT_INTERVAL_SECONDS, clock=time.monotonic):
        self.what, self.total, self.unit = what, total, unit
        self.interval_seconds = interval_seconds
        self.clock = clock
        self.start = self._last_log = clock()
        self.count = 0

    def advance(self, amount=1):
        self.count += amount
        now = self.clock()
        if now - self._last_log >= self.interval_seconds:
            self._last_log = now
            logging.info("%s", self.line(now))

    def line(self, now=None):
        elapsed = max((self.clock() if now is None else now) - self.start, 1e-9)
        rate = self.count / elapsed
        if self.total:
            eta = (self.total - self.count) / rate if rate > 0 else None
            return (f"{self.what}: {self.count:,}/{self.total:,} {self.unit} "
                    f"({self.count / self.total:.0%}), {rate:,.1f} {self.unit}/s, "
                    f"ETA {_duration(eta) if eta is not None else '?'}")
        return f"{self.what}: {self.count:,} {self.unit}, {rate:,.1f} {self.unit}/s"

    def finish(self):
        elapsed = max(self.clock() - self.start, 1e-9)
        logging.info("%s: done, %s %s in %s (%.1f %s/s)", self.what, f"{self.count:,}",
                     self.unit, _duration(elapsed), self.count / elapsed, self.unit)


def track(iterable, what, total=None, unit="examples", interval_seconds=DEFAULT_INTERVAL_SECONDS):
    """Yields from `iterable`, logging progress per item and a last line when it is exhausted."""
    progress = ProgressLog(what, total, unit, interval_seconds)
    for item in iterable:
        yield item
        progress.advance()
    progress.finish()
