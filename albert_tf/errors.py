"""The errors a user can fix, apart from the command-line layer that reports them.

Library code raises `UserInputError` (or a subclass) with a message that names the culprit (the
flag, the file with its line, column or record offset, the config variable) and what was
expected; `cli.run` turns it into one stderr line and exit status 2. Keeping the types here lets
every layer raise them without importing absl's command-line helpers.
"""


class UserInputError(ValueError):
    """Bad input that the user can fix; the message names the flag, file or variable."""


class MissingFileError(UserInputError, FileNotFoundError):
    """A file or directory the user named does not exist (also a FileNotFoundError)."""
