"""Comma-separated lists of globs (the original's --input_file convention) to file lists."""

import tensorflow as tf

_GLOB_CHARACTERS = ("*", "?", "[")


def expand(patterns, flag_name, exclude_suffixes=()):
    """Files matching `patterns` ("a.txt,dir/*.txt"): each glob's matches sorted, duplicates
    dropped, directories and names ending in `exclude_suffixes` skipped.

    Raises ValueError / FileNotFoundError naming the flag and the pattern or file.
    """
    items = [item.strip() for item in (patterns or "").split(",") if item.strip()]
    if not items:
        raise ValueError(f"{flag_name} is empty: expected a comma-separated list of files or globs")
    files = []
    seen = set()
    for item in items:
        if any(char in item for char in _GLOB_CHARACTERS):
            matches = sorted(tf.io.gfile.glob(item))
            matches = [m for m in matches
                       if not tf.io.gfile.isdir(m) and not m.endswith(tuple(exclude_suffixes))]
            if not matches:
                raise ValueError(f"{flag_name}: pattern {item!r} matched no file")
        else:
            if not tf.io.gfile.exists(item):
                raise FileNotFoundError(f"{flag_name}: file {item} does not exist")
            if tf.io.gfile.isdir(item):
                raise ValueError(f"{flag_name}: {item} is a directory; give files or a glob "
                                 f"such as {item.rstrip('/')}/*")
            matches = [item]
        for match in matches:
            if match not in seen:
                seen.add(match)
                files.append(match)
    return files
