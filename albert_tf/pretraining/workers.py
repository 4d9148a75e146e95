"""Runs the per-file producers in this process or in worker processes.

Either way the caller gets the same events, in arrival order:
  ("chunk", file_index, records, fraction_done, num_documents)
  ("done", file_index, FileStats)
Worker processes are started with "spawn" (the parent has TensorFlow loaded, which must not be
forked) and never import TensorFlow. Each takes the next file from a shared task queue, so
big and small files balance out. The event queue is bounded: a worker waits while the parent
is behind, so memory stays bounded. A worker error is re-raised in the parent with the
worker's traceback attached; a worker that dies (e.g. killed) is reported with the file it
had. Leaving the context terminates the workers.
"""

import multiprocessing
import os
import pickle
import queue
import traceback

from albert_tf.pretraining import producer

_QUEUE_CHUNKS_PER_WORKER = 4
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


def _worker_main(options, task_queue, event_queue):
    try:
        resources = producer.Resources(options)
    except BaseException as error:
        event_queue.put(("error", None, _portable(error), traceback.format_exc()))
        return
    while True:
        task = task_queue.get()
        if task is None:
            return
        file_index, path = task
        event_queue.put(("started", file_index, os.getpid()))
        try:
            for event in file_events(file_index, path, resources):
                event_queue.put(event)
        except BaseException as error:
            event_queue.put(("error", file_index, _portable(error), traceback.format_exc()))
            return


class WorkerPool:
    """num_workers > 1 worker processes fed from a task queue."""

    def __init__(self, tasks, options, num_workers):
        self.tasks = tasks
        self.options = options
        self.num_workers = num_workers
        self.processes = []

    def __enter__(self):
        context = multiprocessing.get_context("spawn")
        self._task_queue = context.Queue()
        for task in self.tasks:
            self._task_queue.put(task)
        for _ in range(self.num_workers):
            self._task_queue.put(None)
        self._event_queue = context.Queue(maxsize=_QUEUE_CHUNKS_PER_WORKER * self.num_workers)
        for _ in range(self.num_workers):
            process = context.Process(target=_worker_main, daemon=True,
                                      args=(self.options, self._task_queue, self._event_queue))
            process.start()
            self.processes.append(process)
        return self

    def __exit__(self, *exc_info):
        for process in self.processes:
            if process.is_alive():
                process.terminate()
        for process in self.processes:
            process.join()
        for q in (self._task_queue, self._event_queue):
            q.cancel_join_thread()
            q.close()
        return False

    def events(self):
        paths = dict(self.tasks)
        file_of_pid = {}
        remaining = len(self.tasks)
        while remaining:
            try:
                event = self._event_queue.get(timeout=_POLL_SECONDS)
            except queue.Empty:
                self._check_alive(file_of_pid, paths)
                continue
            kind = event[0]
            if kind == "started":
                file_of_pid[event[2]] = event[1]
                continue
            if kind == "error":
                _, file_index, error, worker_traceback = event
                where = paths[file_index] if file_index is not None else "start-up"
                error.add_note(f"in a data worker process ({where}):\n{worker_traceback}")
                raise error
            if kind == "done":
                remaining -= 1
            yield event

    def _check_alive(self, file_of_pid, paths):
        for process in self.processes:
            if process.exitcode not in (None, 0):
                file_index = file_of_pid.get(process.pid)
                where = f" while processing {paths[file_index]}" if file_index is not None else ""
                raise RuntimeError(f"data worker process {process.pid} died with exit code "
                                   f"{process.exitcode}{where}")


def run(tasks, options, num_workers, resources):
    """The context manager producing `tasks` [(file_index, path)] with `num_workers`."""
    if num_workers <= 1:
        return InProcess(tasks, resources)
    return WorkerPool(tasks, options, num_workers)
