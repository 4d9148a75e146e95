"""Runs the per-file producers in this process or in worker processes.

Either way the caller gets the same events, in arrival order:
  ("chunk", file_index, records, fraction_done, num_documents)
  ("done", file_index, FileStats)

Worker processes are fresh interpreters running `python -m albert_tf.pretraining.workers`,
talking to the parent over two pipes (tasks in, events out). Unlike multiprocessing's "spawn"
they do not re-import the caller's main module, so they never load TensorFlow (~4 s and
~600 MB each) even when the caller's script imports it, and a script needs no
`if __name__ == "__main__"` guard; and the parent, which has TensorFlow's threads, is never
forked. Each worker gets its next file when it finishes one, so big and small files balance
out. A pipe holds little, so a worker waits while the parent is behind: memory stays bounded.
A worker's exception is re-raised in the parent with the worker's traceback attached; a worker
that dies (e.g. killed) is reported with the file it had. Leaving the context ends the workers.
"""

import collections
import os
import pickle
import signal
import subprocess
import sys
import traceback
from multiprocessing import connection

import albert_tf
from albert_tf.pretraining import producer

_POLL_SECONDS = 1.0


def file_events(file_index, path, resources):
    """The events of one input file, produced in the calling process."""
    chunks = producer.produce(path, resources)
    while True:
        try:
            records, fraction, num_documents = next(chunks)
        except StopIteration as stop:
            yield ("done", file_index, stop.value)
            return
        yield ("chunk", file_index, records, fraction, num_documents)


class InProcess:
    """num_workers == 1: everything in the calling process, files in task order."""

    def __init__(self, tasks, resources):
        self.tasks = tasks
        self.resources = resources

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        return False

    def events(self):
        for file_index, path in self.tasks:
            yield from file_events(file_index, path, self.resources)


def _portable(error):
    """The exception itself if it survives pickling, else a RuntimeError with its text."""
    try:
        pickle.loads(pickle.dumps(error))
        return error
    except Exception:  # Any pickling failure: fall back to the message.
        return RuntimeError(f"{type(error).__name__}: {error}")


def _serve(tasks, events):
    """The worker loop: options, then (file_index, path) tasks until None."""
    options = tasks.recv()
    try:
        resources = producer.Resources(options)
    except Exception as error:
        events.send(("error", None, _portable(error), traceback.format_exc()))
        return
    while True:
        task = tasks.recv()
        if task is None:
            return
        file_index, path = task
        try:
            for event in file_events(file_index, path, resources):
                events.send(event)
        except Exception as error:
            events.send(("error", file_index, _portable(error), traceback.format_exc()))
            return


class _Worker:
    def __init__(self, process, tasks, events):
        self.process = process
        self.tasks = tasks
        self.events = events
        self.file_index = None


_DEATH_WAIT_SECONDS = 10


def _next_event(worker, paths):
    """The worker's next event; its death (the pipe ends, even inside a message) as an error."""
    try:
        return worker.events.recv()
    except (EOFError, OSError) as error:
        # A worker killed while sending a large event leaves a partial message: recv then
        # raises OSError("got end of file during message") instead of EOFError.
        where = (f" while processing {paths[worker.file_index]}"
                 if worker.file_index is not None else "")
        try:
            exit_code = worker.process.wait(timeout=_DEATH_WAIT_SECONDS)
        except subprocess.TimeoutExpired:
            raise RuntimeError(f"the pipe from data worker process {worker.process.pid} broke "
                               f"({error or type(error).__name__}){where}; the process is "
                               f"still running") from error
        raise RuntimeError(f"data worker process {worker.process.pid} died with exit code "
                           f"{exit_code}{where}") from None


class WorkerPool:
    """num_workers > 1 worker processes, each fed one file at a time."""

    def __init__(self, tasks, options, num_workers):
        self.tasks = tasks
        self.options = options
        self.num_workers = num_workers
        self.workers = []

    def __enter__(self):
        package_root = os.path.dirname(os.path.dirname(os.path.abspath(albert_tf.__file__)))
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
        try:
            for _ in range(self.num_workers):
                task_read, task_write = os.pipe()
                event_read, event_write = os.pipe()
                process = subprocess.Popen(
                    [sys.executable, "-m", "albert_tf.pretraining.workers", str(task_read),
                     str(event_write)], pass_fds=(task_read, event_write), env=env)
                os.close(task_read)
                os.close(event_write)
                self.workers.append(_Worker(
                    process, connection.Connection(task_write, readable=False),
                    connection.Connection(event_read, writable=False)))
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc_info):
        for worker in self.workers:
            if worker.process.poll() is None:
                worker.process.terminate()
        for worker in self.workers:
            worker.process.wait()
            worker.tasks.close()
            worker.events.close()
        return False

    def _give_next(self, worker, pending):
        task = pending.popleft() if pending else None
        worker.file_index = task[0] if task else None
        worker.tasks.send(task)

    def events(self):
        paths = dict(self.tasks)
        pending = collections.deque(self.tasks)
        by_connection = {}
        for worker in self.workers:
            worker.tasks.send(self.options)
            self._give_next(worker, pending)
            if worker.file_index is not None:
                by_connection[worker.events] = worker
        remaining = len(self.tasks)
        while remaining:
            for ready in connection.wait(list(by_connection), timeout=_POLL_SECONDS):
                worker = by_connection[ready]
                event = _next_event(worker, paths)
                if event[0] == "error":
                    _, file_index, error, worker_traceback = event
                    where = paths[file_index] if file_index is not None else "start-up"
                    error.add_note(f"in a data worker process ({where}):\n{worker_traceback}")
                    raise error
                if event[0] == "done":
                    remaining -= 1
                    self._give_next(worker, pending)
                    if worker.file_index is None:
                        del by_connection[ready]  # It exits; its pipe's end is not a death.
                yield event


def run(tasks, options, num_workers, resources):
    """The context manager producing `tasks` [(file_index, path)] with `num_workers`."""
    if num_workers <= 1:
        return InProcess(tasks, resources)
    return WorkerPool(tasks, options, num_workers)


def main(argv):
    """Worker process entry point: `python -m albert_tf.pretraining.workers TASK_FD EVENT_FD`."""
    # Ctrl-C reaches the whole process group; the parent ends the workers itself.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    tasks = connection.Connection(int(argv[1]), writable=False)
    events = connection.Connection(int(argv[2]), readable=False)
    try:
        _serve(tasks, events)
    except (EOFError, BrokenPipeError):
        pass  # The parent is gone: nothing left to do.


if __name__ == "__main__":
    main(sys.argv)
