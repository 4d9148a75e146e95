"""The versions of one model under a base path, loaded and kept current as TF Serving does: new
numeric version directories are picked up without a restart, a version policy (latest N, all,
specific) chooses which are served, failed loads are retried, and transitions keep the model
available (an old version goes only once a newer one is AVAILABLE; a version that never loads
is END with its error and takes no slot of a good one)."""

import os
import re
import threading

from absl import logging
import tensorflow as tf
from tensorflow.core.protobuf import error_codes_pb2
from tensorflow_serving.apis import get_model_status_pb2

from albert_tf import errors
from albert_tf.serving import preload_checks
from albert_tf.serving.errors import Code, ServingError
from albert_tf.serving.model_runner import DEFAULT_MAX_BATCH_SIZE, ModelRunner
from albert_tf.serving.warmup import WarmupError

DEFAULT_NUM_VERSIONS = 1  # TF Serving's default policy: the latest version only
DEFAULT_POLL_SECS = 1.0
DEFAULT_MAX_NUM_LOAD_RETRIES = 5  # TF Serving's --max_num_load_retries
DEFAULT_LOAD_RETRY_INTERVAL_SECS = 60.0  # TF Serving's --load_retry_interval_micros, 1 minute
_INT64_MAX = 2 ** 63 - 1
_reported_skips = set()  # (export_dir, name) of folders already logged as not a version


def _is_version_name(name):
    return re.fullmatch(r"\d+", name) is not None and int(name) <= _INT64_MAX


def _report_skipped(export_dir, name):
    """Logs once per folder that `name` is skipped: TF Serving skips such folders silently,
    and `v4`, `latest` or `4.0` then look like a version that never loads. Hidden folders (an
    export still being written under `.tmp-...`) and files are not reported."""
    if name.startswith(".") or (export_dir, name) in _reported_skips:
        return
    if tf.io.gfile.isdir(os.path.join(export_dir, name)):
        _reported_skips.add((export_dir, name))
        logging.warning("%s: skipped, not a version: a version folder is named by a "
                        "non-negative 64-bit integer (e.g. 1)", os.path.join(export_dir, name))


def version_dirs(export_dir):
    """{version: directory name} of the version directories under `export_dir` holding a
    saved_model.pb. As TF Serving parses them (safe_strto64): `0005` is version 5, a name
    beyond int64 is not a version (logged once, `_report_skipped`)."""
    if not tf.io.gfile.isdir(export_dir):
        raise errors.MissingFileError(f"{export_dir}: no such export directory")
    if preload_checks.unreadable(export_dir):
        raise errors.UserInputError(preload_checks.permission_denied(export_dir,
                                                                     "model base path"))
    found = {}
    for name in sorted(tf.io.gfile.listdir(export_dir), reverse=True):  # "5" wins over "0005"
        name = name.rstrip("/")
        if not _is_version_name(name):
            _report_skipped(export_dir, name)
            continue
        folder = os.path.join(export_dir, name)
        # An unreadable folder is a version whose load fails naming it, not no version at all.
        if (tf.io.gfile.exists(os.path.join(folder, "saved_model.pb"))
                or preload_checks.unreadable(folder)):
            found.setdefault(int(name), name)
    return found


def resolve_model_dir(export_dir):
    """(SavedModel directory, version): `export_dir` itself (version None), or its highest
    numeric version subdirectory holding a saved_model.pb."""
    if tf.io.gfile.exists(os.path.join(export_dir, "saved_model.pb")):
        return export_dir, None
    versions = version_dirs(export_dir)
    if not versions:
        raise errors.MissingFileError(
            f"{export_dir}: neither a saved_model.pb nor a numeric version subdirectory holding one")
    newest = max(versions)
    return os.path.join(export_dir, versions[newest]), newest


class VersionPolicy:
    """TF Serving's `model_version_policy`: `latest` N (its default, N = 1), `all`, or
    `specific` version numbers."""

    def __init__(self, kind="latest", num_versions=DEFAULT_NUM_VERSIONS, versions=()):
        if kind not in ("latest", "all", "specific"):
            raise errors.UserInputError(f"version policy must be latest, all or specific, got {kind!r}")
        if kind == "latest" and num_versions < 1:
            raise errors.UserInputError(f"latest version policy needs num_versions >= 1, got {num_versions}")
        if kind == "specific" and not versions:
            raise errors.UserInputError("specific version policy needs at least one version")
        self.kind, self.num_versions, self.versions = kind, num_versions, set(versions)

    def __str__(self):
        if self.kind == "latest":
            return f"latest {self.num_versions}"
        return "all" if self.kind == "all" else f"specific versions {sorted(self.versions)}"

    def choose(self, candidates):
        """The versions to serve among `candidates` (highest first)."""
        if self.kind == "latest":
            return candidates[:self.num_versions]
        if self.kind == "all":
            return list(candidates)
        return [version for version in candidates if version in self.versions]


class ServedVersions:
    """The versions of `export_dir` chosen by `policy`, each a runner made by `loader`
    (model_dir, model_name, version, max_batch_size), which also warms it up.

    `export_dir` holding a saved_model.pb itself is served as version 1 and never reloaded.
    `start_polling` rescans every `poll_secs` seconds on a background thread; requests keep being
    answered by the loaded versions while a new one loads. A load that fails is retried
    `max_num_load_retries` times, `retry_interval_secs` apart (a version still being copied
    loads once complete); then the version is END with its error in the status call and the
    policy chooses among the other versions. `labels` maps version labels to versions.
    """

    def __init__(self, export_dir, model_name, max_batch_size=DEFAULT_MAX_BATCH_SIZE,
                 num_versions=DEFAULT_NUM_VERSIONS, policy=None, labels=None,
                 max_num_load_retries=DEFAULT_MAX_NUM_LOAD_RETRIES,
                 retry_interval_secs=DEFAULT_LOAD_RETRY_INTERVAL_SECS, loader=ModelRunner,
                 retry_first_load=True):
        self.export_dir, self.model_name = export_dir, model_name
        self.max_batch_size = max_batch_size
        self.policy = policy or VersionPolicy("latest", num_versions)
        self.labels = dict(labels or {})
        self.max_num_load_retries, self.retry_interval_secs = max_num_load_retries, retry_interval_secs
        self._loader = loader
        self._runners, self._failures, self._loading, self._ended = {}, {}, set(), set()
        self._dirs = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._single = tf.io.gfile.exists(os.path.join(export_dir, "saved_model.pb"))
        if self._single:
            self._runners[1] = loader(export_dir, model_name, 1, max_batch_size)
            return
        resolve_model_dir(export_dir)  # a clear error when there is nothing to serve
        self.refresh(None if retry_first_load else 0)
        if not self._runners:
            raise ServingError(self._nothing_served(), code=Code.UNKNOWN)

    def _nothing_served(self):
        """Why no version is served, naming the model, its base path and each version."""
        if self._failures:
            return ("1 model(s) did not become available: "
                    + ", ".join(f"{{{{name: {self.model_name} version: {version}}} due to error: "
                                f"{message}}}" for version, message in sorted(self._failures.items())))
        return (f"model {self.model_name}: no version under {self.export_dir} matches its "
                f"version policy ({self.policy}; versions on disk: "
                f"{sorted(version_dirs(self.export_dir))})")

    def _load(self, version, retries):
        """A runner for `version`, retried `retries` times (a warm-up failure is not: the
        model itself loaded, its recorded requests fail); None (and the error recorded) when
        it never loads."""
        for attempt in range(retries + 1):
            if attempt and self._stop.wait(self.retry_interval_secs):
                return None
            model_dir = os.path.join(self.export_dir, self._dirs[version])
            try:
                reason = preload_checks.unreadable_reason(model_dir)
                if reason is not None:
                    raise PermissionError(reason)
                return self._loader(model_dir, self.model_name, version, self.max_batch_size)
            except Exception as error:  # reported by the status call; the others stay served
                logging.warning("%s: version %d failed to load (attempt %d of %d): %s",
                                self.export_dir, version, attempt + 1, retries + 1, error)
                message = f"{type(error).__name__}: {error}"
                if isinstance(error, WarmupError):
                    break
        with self._lock:
            self._failures[version] = message
        return None

    def _wanted(self, on_disk):
        with self._lock:
            return self.policy.choose([v for v in on_disk if v not in self._failures])

    def refresh(self, retries=None):
        """Loads the versions the policy wants (each retried `retries` times, None:
        max_num_load_retries), then unloads the unwanted ones, but only while a wanted version
        is AVAILABLE."""
        retries = self.max_num_load_retries if retries is None else retries
        dirs = version_dirs(self.export_dir)
        if not dirs and self._dirs:  # once when the last version goes; the loaded stay served
            logging.warning("No versions of servable %s found under base path %s",
                            self.model_name, self.export_dir)
        on_disk = sorted(dirs, reverse=True)
        with self._lock:
            self._dirs = dirs
            for version in set(self._failures) - set(on_disk):
                del self._failures[version]  # removed from disk: a new copy may load
        wanted = self._wanted(on_disk)
        while True:  # a failed load frees its slot for the next candidate
            missing = [version for version in wanted if version not in self._runners]
            if not missing or self._stop.is_set():
                break
            for version in missing:
                with self._lock:
                    self._loading.add(version)
                runner = self._load(version, retries)
                with self._lock:
                    self._loading.discard(version)
                    if runner is not None:
                        self._runners[version] = runner
                        self._ended.discard(version)
                        logging.info("serving version %d of %s", version, self.model_name)
            wanted_now = self._wanted(on_disk)
            if wanted_now == wanted:
                break
            wanted = wanted_now
        with self._lock:
            if any(version in self._runners for version in wanted):
                for version in set(self._runners) - set(wanted):
                    del self._runners[version]
                    self._ended.add(version)
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
        """The runner of `version`, or of the highest loaded version; None if not loaded."""
        with self._lock:
            if version is None:
                return self._runners[max(self._runners)] if self._runners else None
            return self._runners.get(version)

    def available(self):
        """The versions being served."""
        with self._lock:
            return set(self._runners)

    def retire(self):
        """The model left the config: polling stops, every version is unloaded and stays
        listed as END (TF Serving's servable state monitor keeps them)."""
        self.stop_polling()
        with self._lock:
            self._ended.update(self._runners)
            self._runners.clear()

    def status(self):
        """TF Serving's GetModelStatusResponse of every version, newest first: LOADING while a
        load (or its retries) runs, AVAILABLE, END once unloaded, or END with the error of a
        load that never succeeded."""
        version_status = get_model_status_pb2.ModelVersionStatus
        with self._lock:
            states = {number: (version_status.END, "") for number in self._ended}
            states.update({number: (version_status.LOADING, "") for number in self._loading})
            states.update({number: (version_status.AVAILABLE, "") for number in self._runners})
            states.update({number: (version_status.END, message)
                           for number, message in self._failures.items()})
        response = get_model_status_pb2.GetModelStatusResponse()
        for number, (state, message) in sorted(states.items(), reverse=True):
            entry = response.model_version_status.add(version=number, state=state)
            entry.status.error_code = error_codes_pb2.UNKNOWN if message else error_codes_pb2.OK
            entry.status.error_message = message
        return response
