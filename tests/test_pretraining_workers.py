"""The worker pool's pipe protocol: a worker's death is reported whatever it was sending."""

import os
import subprocess
import sys
from multiprocessing import connection

import pytest

from albert_tf.pretraining import workers

# A worker that announces a 100,000-byte event, sends 10 bytes of it and is killed: what the
# parent sees when SIGKILL lands while a large chunk of records is in the pipe.
_DIES_INSIDE_A_MESSAGE = (
    "import os, signal, struct, sys\n"
    "fd = int(sys.argv[1])\n"
    "os.write(fd, struct.pack('!i', 100000) + b'x' * 10)\n"
    "os.kill(os.getpid(), signal.SIGKILL)\n")
_DIES_BETWEEN_MESSAGES = (
    "import os, signal\n"
    "os.kill(os.getpid(), signal.SIGKILL)\n")


def _worker_running(script):
    event_read, event_write = os.pipe()
    process = subprocess.Popen([sys.executable, "-c", script, str(event_write)],
                               pass_fds=(event_write,))
    os.close(event_write)
    worker = workers._Worker(process, tasks=None,
                             events=connection.Connection(event_read, writable=False))
    worker.file_index = 3
    return worker


@pytest.mark.parametrize("script", [_DIES_INSIDE_A_MESSAGE, _DIES_BETWEEN_MESSAGES],
                         ids=["inside_a_message", "between_messages"])
def test_a_dead_worker_is_reported_with_its_file_and_exit_code(script):
    worker = _worker_running(script)
    try:
        with pytest.raises(RuntimeError, match=rf"data worker process {worker.process.pid} died "
                                               r"with exit code -9 while processing "
                                               r"/data/part-3.txt$"):
            workers._next_event(worker, {3: "/data/part-3.txt"})
    finally:
        worker.events.close()
        worker.process.wait()


def test_a_whole_event_is_received():
    event_read, event_write = os.pipe()
    sender = connection.Connection(event_write, readable=False)
    worker = workers._Worker(None, tasks=None,
                             events=connection.Connection(event_read, writable=False))
    sender.send(("done", 3, {"documents": 1}))
    sender.close()
    assert workers._next_event(worker, {3: "/data/part-3.txt"}) == ("done", 3, {"documents": 1})
    worker.events.close()
