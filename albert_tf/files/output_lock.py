"""One writer per output directory: a second training (or evaluating) run on it is refused.

Two processes on one `--output_dir` would interleave `eval_results.txt`, overwrite each other's
checkpoints and leave a `model.ckpt-best` that matches neither. A run takes an exclusive
`flock` on `<output_dir>/.albert_tf-<role>.lock` for its whole life. The kernel releases a
`flock` when its process dies, however it dies (SIGKILL included), so a killed run never leaves
the directory locked (its lock file stays, unlocked, and only records the holder for the error
message; a finished run removes it).

Roles are separate so that the documented pattern of a trainer and an evaluator on one directory
(two processes) keeps working: `train` writes checkpoints, `eval` writes the evaluation results
and `model.ckpt-best`. Non-local paths (gs://...) cannot be locked this way; there a warning is
logged and the run proceeds, as before.
"""

import contextlib
import fcntl
import os
import socket

from absl import logging

from albert_tf import errors

_held_here = {}  # (real path, role) -> depth: this process already holds that lock


def _is_local(path):
    return "://" not in path


def check_writable(directory, flag_name):
    """Creates `directory` if needed and proves it writable now, before hours of work that
    would end in a failed first save."""
    if not _is_local(directory):
        return
    try:
        os.makedirs(directory, exist_ok=True)
        probe = os.path.join(directory, f".albert_tf-write-probe-{os.getpid()}")
        with open(probe, "w", encoding="utf-8"):
            pass
        os.remove(probe)
    except OSError as error:
        raise errors.UserInputError(f"{flag_name}={directory}: cannot write there "
                                 f"({error.strerror})") from error


@contextlib.contextmanager
def hold(directory, role):
    """Holds the `role` lock of `directory` (created if needed) for the `with` block.

    Raises `errors.UserInputError` naming the directory and the other run when it is taken.
    Re-entrant within one process (a trainer that evaluates each checkpoint it saves)."""
    if not _is_local(directory):
        logging.warning("%s: not a local path, so concurrent runs on it cannot be detected; "
                        "make sure only one %s run writes there", directory, role)
        yield
        return
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as error:
        raise errors.UserInputError(f"{directory}: cannot create the output directory: "
                                 f"{error.strerror}") from error
    path = os.path.join(directory, f".albert_tf-{role}.lock")
    key = (os.path.realpath(path), role)
    if key in _held_here:
        _held_here[key] += 1
        try:
            yield
        finally:
            _held_here[key] -= 1
        return
    handle = _acquire(path, directory, role)
    try:
        os.ftruncate(handle, 0)
        os.pwrite(handle, f"pid {os.getpid()} on {socket.gethostname()}\n".encode(), 0)
        _held_here[key] = 1
        try:
            yield
        finally:
            del _held_here[key]
            os.unlink(path)  # still locked: nobody else can hold this inode
    finally:
        os.close(handle)  # closing the descriptor releases the flock


def _acquire(path, directory, role):
    """An open, flocked descriptor of `path`. The file is removed on release (so a finished run
    leaves nothing behind); a lock won on a file another run just removed is retried."""
    while True:
        try:
            handle = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as error:
            raise errors.UserInputError(f"{directory}: cannot write in the output directory "
                                     f"({error.strerror})") from error
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(handle, 200, 0).decode("utf-8", "replace").strip() or "unknown"
            os.close(handle)
            raise errors.UserInputError(
                f"{directory}: another {role} run is using this output directory ({holder}); "
                f"wait for it to finish or choose another directory") from None
        try:
            same_file = os.stat(path).st_ino == os.fstat(handle).st_ino
        except FileNotFoundError:
            same_file = False
        if same_file:
            return handle
        os.close(handle)
