"""Progress lines for long work (feature conversion, evaluation, prediction): count, rate, ETA.

A GLUE or SQuAD conversion or a whole-set prediction can take many minutes; without a line now
and then a user cannot tell a slow run from a hung one. A line is logged at most every
`interval_seconds` (and once at the end), so short runs stay quiet and long ones steady.
"""

import datetime
import threading
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


class Heartbeat:
    """While a long call that logs nothing runs (a training loop of `--iterations_per_loop`
    steps inside one tf.function: 1000 steps can be many minutes on a CPU), logs
    `what: n/total unit, rate, ETA` from a background thread every `interval_seconds` without
    another log line. `read_count()` must be safe to call from that thread (a variable read).
    The loop itself is untouched: its chunking, and so its results, stay the same."""

    def __init__(self, what, read_count, total, unit="steps",
                 interval_seconds=DEFAULT_INTERVAL_SECONDS):
        self.what, self.read_count, self.total, self.unit = what, read_count, total, unit
        self.interval_seconds = interval_seconds
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name="progress-heartbeat", daemon=True)
        self._last = time.monotonic()

    def logged(self):
        """The caller logged its own progress line: the next beat is one interval from now."""
        self._last = time.monotonic()

    def __enter__(self):
        self._start_count = self.read_count()
        self._first_step = None  # (time, count) when the first step was seen done
        self._thread.start()
        return self

    def __exit__(self, *exc_info):
        self._stop.set()
        self._thread.join()

    def _wait_seconds(self):
        if self._first_step is None:  # look often until the first step is done
            return min(0.5, self.interval_seconds / 4)
        return max(0.05, self._last + self.interval_seconds - time.monotonic())

    def _beat(self):
        """The rate and ETA count from the first step seen done: the time before it is mostly
        tracing the step function, which would inflate the first estimates many times over."""
        while not self._stop.wait(self._wait_seconds()):
            count, now = self.read_count(), time.monotonic()
            if self._first_step is None and count > self._start_count:
                self._first_step = (now, count)
            if now - self._last < self.interval_seconds:
                continue
            rate, eta = 0.0, "?"
            if self._first_step is not None and count > self._first_step[1]:
                rate = (count - self._first_step[1]) / max(now - self._first_step[0], 1e-9)
                eta = _duration((self.total - count) / rate)
            logging.info("%s: %d/%d %s, %.2f %s/s, ETA %s", self.what, count, self.total,
                         self.unit, rate, self.unit, eta)
            self._last = time.monotonic()
