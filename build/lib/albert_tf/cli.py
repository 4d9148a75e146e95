"""One convention for turning bad input into a command-line error, for every script.

Library code raises `UserInputError` (or a subclass) with a message that names the culprit (the
flag, the file with its line, column or record offset, the config variable) and what was
expected. The scripts start with `cli.run(main)` instead of `absl.app.run(main)`: such an error
ends the process with exit status 2 and one line on stderr,

    run_classifier.py: error: --learning_rate=-1: expected a number > 0

and no traceback, because the user's input is at fault, not the program. Any other exception is
a bug and keeps its traceback. Tests call `main` directly and assert on `UserInputError`.
"""

import os
import sys

from absl import app

EXIT_USER_ERROR = 2


class UserInputError(ValueError):
    """Bad input that the user can fix; the message names the flag, file or variable."""


class MissingFileError(UserInputError, FileNotFoundError):
    """A file or directory the user named does not exist (also a FileNotFoundError)."""


def error_line(error, program=None):
    """The one stderr line for `error`: `<program>: error: <message>`."""
    program = program or os.path.basename(sys.argv[0]) or "albert_tf"
    message = " ".join(str(error).split("\n")) if str(error) else type(error).__name__
    return f"{program}: error: {message}"


def run(main, argv=None):
    """`absl.app.run(main)`, with `UserInputError` (and `app.UsageError`) as a one-line error."""

    def guarded_main(args):
        try:
            return main(args)
        except (UserInputError, app.UsageError) as error:
            print(error_line(error), file=sys.stderr, flush=True)
            sys.exit(EXIT_USER_ERROR)

    app.run(guarded_main, argv=argv)
