"""One convention for turning bad input into a command-line error, for every script.

Library code raises `errors.UserInputError` (or a subclass) with a message that names the culprit (the
flag, the file with its line, column or record offset, the config variable) and what was
expected. The scripts start with `cli.run_script(define_flags, run)` (or `cli.run(main)`)
instead of `absl.app.run(main)`: such an error ends the process with exit status 2 and one line
on stderr,

    run_classifier.py: error: --learning_rate=-1: expected a number > 0

and no traceback, because the user's input is at fault, not the program. Any other exception is
a bug and keeps its traceback. Tests call a script's `run(flag_values)` in-process on their own
`absl.flags.FlagValues` and assert on `UserInputError`.
"""

import atexit
import dataclasses
import gc
import inspect
import math
import os
import re
import sys

from absl import app
from absl import flags
from absl import logging

from albert_tf.errors import UserInputError

EXIT_USER_ERROR = 2


def error_line(error, program=None):
    """The one stderr line for `error`: `<program>: error: <message>`, plus what to do next
    when a missing file lies under data/, where `make data` puts the real data sets."""
    program = program or os.path.basename(sys.argv[0]) or "albert_tf"
    message = " ".join(str(error).split("\n")) if str(error) else type(error).__name__
    if _UNDER_DATA.search(message) and (isinstance(error, FileNotFoundError)
                                        or _MISSING.search(message)):
        message += " (`make data` fetches the real data sets into data/)"
    return f"{program}: error: {message}"


_UNDER_DATA = re.compile(r"(^|[\s'\"=,])(\./)?data/")
_MISSING = re.compile(r"not found|does not exist|matched no file|no such")


def run(main, argv=None):
    """`absl.app.run(main)`, with `UserInputError` (and `app.UsageError`) as a one-line error,
    and exit status 0 after `--help` (absl exits 1 after printing the help it was asked for)."""

    # Python's last garbage collections walk every object TensorFlow and Keras made: about 1 s
    # of each script's exit (0.8-1.0 s after `import tensorflow` alone). Frozen, they are left to
    # the end of the process; nothing of ours needs a collector to flush or close it. Once per
    # process, however many times a test calls `run` in it.
    atexit.unregister(gc.freeze)
    atexit.register(gc.freeze)

    def guarded_main(args):
        try:
            return main(args)
        except (UserInputError, app.UsageError) as error:
            print(error_line(error), file=sys.stderr, flush=True)
            sys.exit(EXIT_USER_ERROR)

    try:
        app.run(guarded_main, argv=argv)
    except SystemExit as exit_:
        if exit_.code == 1 and asks_for_help(sys.argv if argv is None else argv):
            sys.exit(0)
        raise


_HELP = re.compile(r"--?(help|helpshort|helpfull|helpxml|\?)(=(true|t|1|yes|y))?", re.I)


def asks_for_help(argv):
    """Whether a flag of `argv` (before a `--`) is one of absl's help flags, which print the
    help and exit before `main` runs."""
    for word in argv[1:]:
        if word == "--":
            return False
        if _HELP.fullmatch(word):
            return True
    return False


class Definer:
    """`define.bool(...)` = `flags.DEFINE_bool(..., flag_values=...)`: a script defines its flags
    on the FlagValues it is given, so tests can parse their own and run it in-process."""

    def __init__(self, flag_values, frames_up=1):
        """absl files a flag under the module that defines it (`--helpfull` lists each module's
        own flags): here the module `frames_up` calls above, named as absl names `__main__`
        (2 from a helper that defines a script's own flags for it)."""
        self._flag_values = flag_values
        frame = inspect.currentframe()
        for _ in range(frames_up):
            frame = frame.f_back
        module_name = frame.f_globals["__name__"]
        self._module_name = sys.argv[0] if module_name == "__main__" else module_name

    def __getattr__(self, kind):
        definer = getattr(flags, f"DEFINE_{kind}")

        def define(*args, **kwargs):
            holder = definer(*args, flag_values=self._flag_values,
                             module_name=self._module_name, **kwargs)
            if kind == "float":
                _require_finite(holder, self._flag_values)
            return holder

        return define


def _require_finite(holder, flag_values):
    """absl's float bounds let NaN through (every comparison with it is false) and inf passes
    a lower bound: `--learning_rate=inf` would train to NaN. A float flag must be finite, or
    NaN where NaN is its default (the flag's "not set")."""
    nan_default = isinstance(holder.default, float) and math.isnan(holder.default)
    flags.register_validator(
        holder.name,
        lambda value: value is None or math.isfinite(value) or (nan_default and math.isnan(value)),
        message=f"--{holder.name} must be a finite number", flag_values=flag_values)


def run_script(define_flags, run_flags):
    """A script's console entry: `define_flags(absl's FLAGS)`, then `run_flags(FLAGS)` under
    `run`'s error convention. Positional arguments are refused (every input is a flag).

    Logs at INFO (progress, results) unless `-v N` / `--verbosity` says otherwise; `-v 1`
    adds the details (e.g. every variable a checkpoint load mapped)."""
    before = set(flags.FLAGS)
    define_flags(flags.FLAGS)
    _list_in_help(define_flags, sorted(set(flags.FLAGS) - before))

    def main(argv):
        if len(argv) > 1:
            raise app.UsageError(f"unexpected arguments: {' '.join(argv[1:])}")
        if not flags.FLAGS["verbosity"].present:
            logging.set_verbosity(logging.INFO)
        run_flags(flags.FLAGS)

    run(main)


def _list_in_help(define_flags, names):
    """Makes `--help` list every flag the script defined, installed or not.

    absl's `--help` shows the key flags of the module named `sys.argv[0]` and `__main__`'s
    docstring. From the checkout the script is `__main__` and its flags are filed under that
    path; installed, `sys.argv[0]` is the console command (`.../bin/run_classifier`), the flags
    sit under `albert_tf.scripts.run_classifier` and `__main__` is pip's wrapper, so `--help`
    showed nothing. The shared flags (learning rate, batch sizes, ...) are the script's too."""
    for name in names:
        flags.FLAGS.register_key_flag_for_module(sys.argv[0], flags.FLAGS[name])
    main_module = sys.modules["__main__"]
    if not main_module.__doc__:
        main_module.__doc__ = sys.modules[define_flags.__module__].__doc__


def dataclass_from_flags(cls, flag_values, **overrides):
    """A `cls` (a dataclass) from the flags named like its fields, then `overrides`: the field
    list is the one source, so a new option cannot be left out of a script."""
    values = {field.name: flag_values[field.name].value for field in dataclasses.fields(cls)
              if field.name in flag_values}
    values.update(overrides)
    return cls(**values)
