"""The versions of one model under an export base, loaded and kept current as TF Serving does:
a new numeric version directory is picked up without a restart and a removed one is unloaded."""

import os
import re
import threading

from absl import logging
import tensorflow as tf

from albert_tf.serving.errors import ServingError
from albert_tf.serving.model_runner import DEFAULT_MAX_BATCH_SIZE, ModelRunner

DEFAULT_NUM_VERSIONS = 2
DEFAULT_POLL_SECS = 1.0


def numeric_versions(export_dir):
    """The version numbers under `export_dir` that hold a saved_model.pb, highest first."""
    if not tf.io.gfile.isdir(export_dir):
        raise FileNotFoundError(f"{export_dir}: no such export directory")
    versions = [int(name.strip("/")) for name in tf.io.gfile.listdir(export_dir)
                if re.fullmatch(r"\d+/?", name)]
    return sorted((version for version in versions if tf.io.gfile.exists(
        os.path.join(export_dir, str(version), "saved_model.pb"))), reverse=True)


def resolve_model_dir(export_dir):
    """(SavedModel directory, version): `export_dir` itself (version None), or its highest
    numeric version subdirectory holding a saved_model.pb."""
    if tf.io.gfile.exists(os.path.join(export_dir, "saved_model.pb")):
        return export_dir, None
    versions = numeric_versions(export_dir)
    if not versions:
        raise FileNotFoundError(
            f"{export_dir}: neither a saved_model.pb nor a numeric version subdirectory holding one")
    return os.path.join(export_dir, str(versions[0])), versions[0]


class ServedVersions:
    """The newest `num_versions` versions of `export_dir`, each a `ModelRunner`.

    `export_dir` holding a saved_model.pb itself is served as version 1 and never reloaded.
    `start_polling` rescans every `poll_secs` seconds on a background thread; requests keep being
    answered by the loaded versions while a new one loads. A version that fails to load is
    reported in the status call with its error and the others stay served.
    """

    def __init__(self, export_dir, model_name, max_batch_size=DEFAULT_MAX_BATCH_SIZE,
                 num_versions=DEFAULT_NUM_VERSIONS):
        self.export_dir, self.model_name = export_dir, model_name
        self.max_batch_size, self.num_versions = max_batch_size, num_versions
        self._runners, self._failures = {}, {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._single = tf.io.gfile.exists(os.path.join(export_dir, "saved_model.pb"))
        if self._single:
            self._runners[1] = ModelRunner(export_dir, model_name, 1, max_batch_size)
        else:
            resolve_model_dir(export_dir)  # a clear error when there is nothing to serve
            self.refresh()
            if not self._runners:
                raise ServingError(f"{export_dir}: no version could be loaded: {self._failures}",
                                   status=500)

    def refresh(self):
        """Loads new versions among the newest `num_versions`, unloads the rest."""
        wanted = numeric_versions(self.export_dir)[:self.num_versions]
        for version in wanted:
            if version in self._runners or version in self._failures:
                continue
            try:
                runner = ModelRunner(os.path.join(self.export_dir, str(version)), self.model_name,
                                     version, self.max_batch_size)
            except Exception as error:  # reported by the status call; the other versions stay up
                logging.exception("%s: version %d failed to load", self.export_dir, version)
                self._failures[version] = f"{type(error).__name__}: {error}"
                continue
            with self._lock:
                self._runners[version] = runner
            logging.info("serving version %d of %s", version, self.model_name)
        with self._lock:
            for version in set(self._runners) - set(wanted):
                del self._runners[version]
                logging.info("unloaded version %d of %s", version, self.model_name)

    def start_polling(self, poll_secs=DEFAULT_POLL_SECS):
        if self._single:
            return
        def poll():
            while not self._stop.wait(poll_secs):
                try:
                    self.refresh()
                except Exception:  # a transient listing error; the loaded versions stay served
                    logging.exception("%s: rescanning versions failed", self.export_dir)
        threading.Thread(target=poll, daemon=True, name="version-poll").start()

    def stop_polling(self):
        self._stop.set()

    def get(self, version=None):
        """The runner of `version`, or of the highest loaded version; 404 as TF Serving says it."""
        with self._lock:
            if version is None:
                if self._runners:
                    return self._runners[max(self._runners)]
                raise ServingError(f"Servable not found for request: Latest({self.model_name})",
                                   status=404)
            if version in self._runners:
                return self._runners[version]
        raise ServingError(f"Servable not found for request: Specific({self.model_name}, "
                           f"{version})", status=404)

    def status(self, version=None):
        """TF Serving's GetModelStatus JSON for all versions, or for `version` (404 if unknown)."""
        with self._lock:
            states = {number: ("AVAILABLE", "OK", "") for number in self._runners}
        states.update({number: ("END", "UNKNOWN", message)
                       for number, message in self._failures.items()})
        if version is not None:
            if version not in states:
                self.get(version)  # raises the 404
            states = {version: states[version]}
        return {"model_version_status": [
            {"version": str(number), "state": state,
             "status": {"error_code": code, "error_message": message}}
            for number, (state, code, message) in sorted(states.items(), reverse=True)]}
