"""Comma-separated lists of globs (the original's --input_file convention) to file lists.

A glob never matches hidden or temporary files: a killed writer leaves `.<name>.tmp-*` files
beside its outputs (see `io_utils.atomic_path`), and `tf.io.gfile.glob` matches dot-files, so
`dir/*` would otherwise feed half-written records into training, which then dies hours later.
A file named explicitly is taken as given.
"""

import os

import tensorflow as tf

from albert_tf import errors
from albert_tf.files import io_utils

_GLOB_CHARACTERS = ("*", "?", "[")


def is_hidden_or_temporary(path):
    name = os.path.basename(path)
    return name.startswith(".") or io_utils.TEMP_MARKER in name


def expand(patterns, flag_name, exclude_suffixes=()):
    """Files matching `patterns` ("a.txt,dir/*.txt"): each glob's matches sorted, duplicates
    dropped; directories, hidden and temporary files and names ending in `exclude_suffixes`
    skipped.

    Raises `errors.UserInputError` (`errors.MissingFileError` for a missing file) naming the flag and
    the pattern or file.
    """
    items = [item.strip() for item in (patterns or "").split(",") if item.strip()]
    if not items:
        raise errors.UserInputError(
            f"{flag_name} is empty: expected a comma-separated list of files or globs")
    files = []
    seen = set()
    for item in items:
        if any(char in item for char in _GLOB_CHARACTERS):
            matches = sorted(tf.io.gfile.glob(item))
            matches = [m for m in matches
                       if not is_hidden_or_temporary(m) and not tf.io.gfile.isdir(m)
                       and not m.endswith(tuple(exclude_suffixes))]
            if not matches:
                raise errors.MissingFileError(f"{flag_name}: pattern {item!r} matched no file "
                                           "(hidden and temporary files are never matched)")
        else:
            if not tf.io.gfile.exists(item):
                raise errors.MissingFileError(f"{flag_name}: file {item} does not exist")
            if tf.io.gfile.isdir(item):
                raise errors.UserInputError(f"{flag_name}: {item} is a directory; give files or a "
                                         f"glob such as {item.rstrip('/')}/*")
            matches = [item]
        for match in matches:
            if match not in seen:
                seen.add(match)
                files.append(match)
    return files
