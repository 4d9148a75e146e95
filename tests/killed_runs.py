"""Killing a command-line run while it writes its outputs, for the "nothing half-written" tests."""

import os
import signal
import subprocess
import time


def kill_while_writing(command, out_dir, cwd, env, timeout):
    """Starts `command` in a session of its own, SIGKILLs its whole process group (workers
    included) half a second after a `.tmp-` file appears in `out_dir`, and returns once it is
    dead; fails if the run ends first or writes nothing within `timeout` seconds."""
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               env=env, cwd=cwd, start_new_session=True)
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and process.poll() is None:
            if out_dir.exists() and any(".tmp-" in name for name in os.listdir(out_dir)):
                break
            time.sleep(0.05)
        assert process.poll() is None, "the run ended before it could be killed"
        time.sleep(0.5)  # Well inside writing.
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
