"""Which tf.distribute strategy to train under (replaces the original TPUEstimator set-up).

auto: TPUStrategy with --use_tpu (TPUClusterResolver from --tpu_name/--master, --tpu_zone,
--gcp_project); MultiWorkerMirroredStrategy when TF_CONFIG names more than one task;
MirroredStrategy over 2+ local GPUs; OneDeviceStrategy on a single GPU; the default strategy
(one CPU) otherwise. --distribution_strategy forces one of them.

--cpu_replicas=N (N > 1) splits the CPU into N logical devices and trains data-parallel over
them under MirroredStrategy, each op on cores / N intra-op threads: at the small model's shapes
(hidden 128, batch 64 x 64) an op gains little from a second thread, so two replicas of half
the batch may use two cores better; the replicas wait for each other at every step's sums,
which a loaded machine makes slow (measured in bench/RESULTS.md). The global batch, the loss per
step and the checkpoints are the same as one replica's (the loop sums gradients over replicas
before one update). It must be set before TensorFlow's runtime starts (the first op or device
listing).
"""

import json
import os

from absl import logging
import tensorflow as tf

from albert_tf import errors

STRATEGIES = ("auto", "one_device", "mirrored", "multi_worker_mirrored", "tpu")


def _cluster_task_count():
    raw = os.environ.get("TF_CONFIG")
    if not raw:
        return 0
    try:
        cluster = json.loads(raw).get("cluster", {})
    except json.JSONDecodeError as error:
        raise errors.UserInputError(f"TF_CONFIG is not valid JSON ({error}): {raw!r}") from error
    return sum(len(tasks) for role, tasks in cluster.items() if role in ("chief", "worker"))


def _tpu_strategy(tpu_name, tpu_zone, gcp_project, master, num_tpu_cores):
    resolver = tf.distribute.cluster_resolver.TPUClusterResolver(
        tpu=tpu_name or master or "", zone=tpu_zone, project=gcp_project)
    tf.config.experimental_connect_to_cluster(resolver)
    topology = tf.tpu.experimental.initialize_tpu_system(resolver)
    available = topology.num_tasks * topology.num_tpus_per_task
    device_assignment = None
    if num_tpu_cores != available:
        if num_tpu_cores > available:
            raise errors.UserInputError(f"--num_tpu_cores={num_tpu_cores} but the TPU has {available} cores")
        device_assignment = tf.tpu.experimental.DeviceAssignment.build(
            topology, num_replicas=num_tpu_cores)
    return tf.distribute.TPUStrategy(resolver, experimental_device_assignment=device_assignment)


def split_cpu(replicas):
    """Splits the CPU into `replicas` logical devices (each op on cores / replicas intra-op
    threads, `replicas` ops at a time); returns their names. Raises UserInputError once
    TensorFlow's runtime has started, when the split can no longer be made."""
    cores = len(os.sched_getaffinity(0))
    cpu = tf.config.list_physical_devices("CPU")[0]
    try:
        tf.config.set_logical_device_configuration(
            cpu, [tf.config.LogicalDeviceConfiguration() for _ in range(replicas)])
        tf.config.threading.set_intra_op_parallelism_threads(max(1, cores // replicas))
        tf.config.threading.set_inter_op_parallelism_threads(replicas)
    except RuntimeError as error:
        raise errors.UserInputError(
            f"--cpu_replicas={replicas} must be applied before TensorFlow's runtime starts, but "
            f"it has already started ({error})") from error
    return [f"/cpu:{index}" for index in range(replicas)]


def resolve_strategy(distribution_strategy="auto", use_tpu=False, tpu_name=None, tpu_zone=None,
                     gcp_project=None, master=None, num_tpu_cores=8, cpu_replicas=1):
    """Returns the strategy the flags ask for; logs the choice and the replica count."""
    if cpu_replicas > 1:
        return _cpu_replicas_strategy(distribution_strategy, use_tpu, cpu_replicas)
    if distribution_strategy not in STRATEGIES:
        raise errors.UserInputError(f"--distribution_strategy must be one of {', '.join(STRATEGIES)}, "
                         f"got {distribution_strategy!r}")
    if use_tpu and distribution_strategy not in ("auto", "tpu"):
        raise errors.UserInputError(f"--use_tpu conflicts with --distribution_strategy="
                         f"{distribution_strategy}; drop one of them")
    choice = distribution_strategy
    if choice == "auto":
        gpus = tf.config.list_logical_devices("GPU")
        if use_tpu:
            choice = "tpu"
        elif _cluster_task_count() > 1:
            choice = "multi_worker_mirrored"
        elif len(gpus) > 1:
            choice = "mirrored"
        elif gpus:
            choice = "one_device"
        else:
            choice = "default"
    if choice == "tpu":
        strategy = _tpu_strategy(tpu_name, tpu_zone, gcp_project, master, num_tpu_cores)
    elif choice == "multi_worker_mirrored":
        strategy = tf.distribute.MultiWorkerMirroredStrategy()
    elif choice == "mirrored":
        strategy = tf.distribute.MirroredStrategy()
    elif choice == "one_device":
        gpus = tf.config.list_logical_devices("GPU")
        strategy = tf.distribute.OneDeviceStrategy(gpus[0].name if gpus else "/cpu:0")
    else:
        strategy = tf.distribute.get_strategy()
    logging.info("Distribution: %s (%s), %d replica(s) in sync", choice,
                 type(strategy).__name__, strategy.num_replicas_in_sync)
    return strategy


def _cpu_replicas_strategy(distribution_strategy, use_tpu, cpu_replicas):
    if use_tpu or distribution_strategy not in ("auto", "mirrored"):
        asked = "--use_tpu" if use_tpu else f"--distribution_strategy={distribution_strategy}"
        raise errors.UserInputError(
            f"--cpu_replicas={cpu_replicas} trains under MirroredStrategy over logical CPUs and "
            f"conflicts with {asked}; drop one of them")
    devices = split_cpu(cpu_replicas)
    if tf.config.list_logical_devices("GPU"):
        raise errors.UserInputError(f"--cpu_replicas={cpu_replicas} is for CPU-only machines, "
                                    "but this one has a GPU; drop it")
    strategy = tf.distribute.MirroredStrategy(devices)
    logging.info("Distribution: mirrored over %d logical CPUs (%d intra-op thread(s) each), %d "
                 "replica(s) in sync", cpu_replicas,
                 tf.config.threading.get_intra_op_parallelism_threads(),
                 strategy.num_replicas_in_sync)
    return strategy


def is_tpu(strategy):
    """True under TPUStrategy (the model then uses the one-hot embedding lookup)."""
    return isinstance(strategy, (tf.distribute.TPUStrategy,))


def is_chief(strategy):
    """Whether this process writes the final checkpoint names and summaries."""
    resolver = getattr(strategy, "cluster_resolver", None)
    if resolver is None or not isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
        return True
    task_type, task_id = resolver.task_type, resolver.task_id
    if task_type in (None, "chief"):
        return True
    cluster = resolver.cluster_spec().as_dict()
    return task_type == "worker" and task_id == 0 and "chief" not in cluster
