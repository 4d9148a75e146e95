"""TensorFlow's own log lines kept to what a user should see: TF_CPP_MIN_LOG_LEVEL applied to
what it prints while it is imported, and its routine Python INFO lines demoted to DEBUG.

TensorFlow 2.21 logs its start-up banner ("oneDNN custom operations are on", "Could not find
cuda drivers on your machine", after absl's "All log messages before absl::InitializeLog() is
called are written to STDERR") through absl's C++ logging before it reads TF_CPP_MIN_LOG_LEVEL,
so the level does not hide them (tensorflow/tensorflow#100442), on every process. `install()`
makes the first `import tensorflow` run with the native stderr (fd 2) captured; afterwards every
captured line is written back except the native log lines the level hides (`I` below 1, `W`
below 2, `E` below 3) and absl's notice when it hides any. Python output, tracebacks, fatal
lines and anything not in absl's log format pass unchanged. A process killed during the import
itself loses what was captured; TF_CPP_MIN_LOG_LEVEL=0 turns the capture off.

`demote_routine_lines()`: TensorFlow's Python code logs at INFO, so at the scripts' default
verbosity, lines that read like trouble in a normal run: "Function `...` contains input name(s)
... with unsupported characters which will be renamed" on every SavedModel export (absl
logging, saved_model/signature_serialization.py; the renaming is TensorFlow's rule for the
signature's input names), "Sharding callback duration: N microseconds" after every checkpoint
(absl logging, checkpoint/functional_saver.py) and "Assets written to: ..." (the `tensorflow`
Python logger, saved_model/builder_impl.py). They become DEBUG lines, shown with `-v 1` (or the
`tensorflow` logger at DEBUG).
"""

import contextlib
import importlib.abc
import importlib.machinery
import logging
import os
import re
import sys
import tempfile

from absl import logging as absl_logging

_SEVERITY = {b"I": 0, b"W": 1, b"E": 2, b"F": 3}
_NATIVE_LINE = re.compile(rb"([IWEF])\d{4} [\d:.]+ +\d+ [^ \]]+:\d+\] ")
_ABSL_NOTICE = b"WARNING: All log messages before absl::InitializeLog() is called are written to STDERR"


def shown(line, level):
    """Whether `line` (bytes, no newline) stays visible at TF_CPP_MIN_LOG_LEVEL `level`."""
    if level >= 1 and line.strip() == _ABSL_NOTICE:
        return False
    match = _NATIVE_LINE.match(line)
    return not match or _SEVERITY[match.group(1)] >= level


@contextlib.contextmanager
def filtered_stderr(level):
    """Captures fd 2 in the block, then writes back the lines `shown` at `level`."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as capture:
        os.dup2(capture.fileno(), 2)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            capture.seek(0)
            kept = [line for line in capture.read().splitlines(keepends=True)
                    if shown(line.rstrip(b"\r\n"), level)]
            os.write(2, b"".join(kept))


class _FilteredLoader(importlib.abc.Loader):
    def __init__(self, loader, level):
        self._loader, self._level = loader, level

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        module.__loader__ = module.__spec__.loader = self._loader
        with filtered_stderr(self._level):
            self._loader.exec_module(module)


class _TensorFlowFinder(importlib.abc.MetaPathFinder):
    """Finds `tensorflow` once, through the normal path search, with `_FilteredLoader`."""

    def __init__(self, level):
        self._level = level

    def find_spec(self, name, path, target=None):
        if name != "tensorflow":
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is not None and spec.loader is not None:
            spec.loader = _FilteredLoader(spec.loader, self._level)
        return spec


def install():
    """Filters the first `import tensorflow` at the current TF_CPP_MIN_LOG_LEVEL (nothing to do
    when TensorFlow is imported already or the level is 0)."""
    try:
        level = int(os.environ.get("TF_CPP_MIN_LOG_LEVEL", "0"))
    except ValueError:  # not a number: TensorFlow hides nothing either
        return
    if level > 0 and "tensorflow" not in sys.modules and not any(
            isinstance(finder, _TensorFlowFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, _TensorFlowFinder(level))


# (Python logger, the TensorFlow source file that logs it, how the message's format begins)
_ROUTINE_LINES = (
    ("absl", "signature_serialization.py", "Function `%s` contains input name(s) %s with unsupported"),
    ("absl", "functional_saver.py", "Sharding callback duration"),
    ("tensorflow", "builder_impl.py", "Assets written to"),
)


class _DemoteRoutine(logging.Filter):
    """Turns `lines` ((source file, message start) of `logger`) into DEBUG records, kept only
    when `logger` shows DEBUG."""

    def __init__(self, logger, lines):
        super().__init__()
        self._logger, self._lines = logger, lines

    def filter(self, record):
        if not any(os.path.basename(record.pathname) == source and str(record.msg).startswith(start)
                   for source, start in self._lines):
            return True
        record.levelno, record.levelname = logging.DEBUG, logging.getLevelName(logging.DEBUG)
        return self._logger.isEnabledFor(logging.DEBUG)


def demote_routine_lines():
    """Installs `_DemoteRoutine` on the `absl` and `tensorflow` loggers (once)."""
    for name in sorted({name for name, _, _ in _ROUTINE_LINES}):
        # absl's own logger object (an ABSLLogger), which importing absl.logging creates
        logger = absl_logging.get_absl_logger() if name == "absl" else logging.getLogger(name)
        if not any(isinstance(existing, _DemoteRoutine) for existing in logger.filters):
            logger.addFilter(_DemoteRoutine(logger, [(source, start) for logger_name, source, start
                                                     in _ROUTINE_LINES if logger_name == name]))
