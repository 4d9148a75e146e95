"""TF_CPP_MIN_LOG_LEVEL applied to what TensorFlow prints while it is imported.

TensorFlow 2.21 logs its start-up banner ("oneDNN custom operations are on", "Could not find
cuda drivers on your machine", after absl's "All log messages before absl::InitializeLog() is
called are written to STDERR") through absl's C++ logging before it reads TF_CPP_MIN_LOG_LEVEL,
so the level does not hide them (tensorflow/tensorflow#100442), on every process. `install()`
makes the first `import tensorflow` run with the native stderr (fd 2) captured; afterwards every
captured line is written back except the native log lines the level hides (`I` below 1, `W`
below 2, `E` below 3) and absl's notice when it hides any. Python output, tracebacks, fatal
lines and anything not in absl's log format pass unchanged. A process killed during the import
itself loses what was captured; TF_CPP_MIN_LOG_LEVEL=0 turns the capture off.
"""

import contextlib
import importlib.abc
import importlib.machinery
import os
import re
import sys
import tempfile

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
