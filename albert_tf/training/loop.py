"""The one custom training loop every script uses (replaces the original TPUEstimator).

    trainer = loop.Trainer(task, strategy, config)   # builds model + optimizer under the scope
    trainer.train()                                  # resumes from output_dir, saves, logs
    metrics = trainer.evaluate(batch_size=64, max_steps=100)

Per call of one `tf.function`, `iterations_per_loop` steps run through `strategy.run`. A step
takes the replica's slice of the global batch (`train_batch_size` / replicas), splits it into
`gradient_accumulation_steps` micro-batches, sums their gradients (each micro-batch's loss is its
share of the global-batch loss, see `task.Task`), then makes ONE optimizer update: the
optimizer sums over replicas, clips to global norm 1.0 and applies LAMB/AdamW. The update is
therefore the same for any split of the global batch over replicas and micro-batches.

Precision: `mixed_bfloat16` / `mixed_float16` are Keras policies for the model (variables and
optimizer state stay float32); float16 adds dynamic loss scaling (Keras LossScaleOptimizer,
whose scale is saved in `train_state/` beside each checkpoint). `enable_xla` compiles the
forward and backward pass of a micro-batch with XLA.

After each loop it logs step, loss, the task's metrics, learning rate, examples/s and ETA, writes
the same scalars as TensorBoard summaries to `output_dir`, and saves `model.ckpt-<step>` every
`save_checkpoints_steps` (and at the last step), with `train_state/step-<step>` beside it (input
position, dropout seed states: see `checkpointing`), so a killed run started again resumes
exactly. A NaN or Inf loss stops training with an error
naming the step; no checkpoint is written after it, so the last good one stays the latest.
"""

import dataclasses
import datetime
import os
import time
import warnings

from absl import logging
import keras
import numpy as np
import tensorflow as tf
from tensorflow.core.framework import summary_pb2

from albert_tf import errors, progress
from albert_tf.files import io_utils, output_lock
from albert_tf.modeling import dtype_policy
from albert_tf.training import optimization
from albert_tf.training import checkpointing, prediction, replica_input, strategy as strategy_lib

PRECISION_POLICIES = {
    "float32": "float32", "mixed_bfloat16": "mixed_bfloat16", "mixed_float16": "mixed_float16"}


_SCALAR_METADATA = summary_pb2.SummaryMetadata(
    plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name="scalars")).SerializeToString()


# SQuAD and tagging heads read the sequence output, so the encoder's pooler (kept: checkpoints
# carry it) gets no gradient and Keras warns at every trace; a warning about others still shows.
UNUSED_POOLER_WARNING = r"Gradients do not exist for variables \[('[^']*pooler/(kernel|bias)'(, )?)+\] "
warnings.filterwarnings("ignore", UNUSED_POOLER_WARNING)


class NonFiniteLossError(RuntimeError):
    """The training loss became NaN or Inf."""


@dataclasses.dataclass
class TrainingConfig:
    """Everything the loop needs; scripts fill it from their flags (see `training.flags`)."""
    output_dir: str
    train_batch_size: int
    num_train_steps: int
    num_warmup_steps: int = 0
    learning_rate: float = 5e-5
    optimizer: str = "adamw"
    poly_power: float = 1.0
    start_warmup_step: int = 0
    save_checkpoints_steps: int = 1000
    keep_checkpoint_max: int = 5
    iterations_per_loop: int = 1000
    init_checkpoint: str = None
    init_from_group0: bool = False
    precision: str = "float32"
    enable_xla: bool = False
    gradient_accumulation_steps: int = 1
    encoder_learning_rate_multiplier: float = 1.0

    def validate(self, num_replicas):
        positive = ("train_batch_size", "num_train_steps", "save_checkpoints_steps",
                    "iterations_per_loop", "gradient_accumulation_steps", "keep_checkpoint_max")
        for name in positive:
            if getattr(self, name) <= 0:
                raise errors.UserInputError(f"--{name} must be > 0, got {getattr(self, name)}")
        if self.precision not in PRECISION_POLICIES:
            raise errors.UserInputError(f"--precision must be one of {', '.join(PRECISION_POLICIES)}, "
                             f"got {self.precision!r}")
        if self.encoder_learning_rate_multiplier < 0:
            raise errors.UserInputError("--encoder_learning_rate_multiplier must be >= 0, got "
                                        f"{self.encoder_learning_rate_multiplier}")
        if self.optimizer not in optimization.OPTIMIZERS:
            raise errors.UserInputError(f"--optimizer must be one of {', '.join(optimization.OPTIMIZERS)}, "
                             f"got {self.optimizer!r}")
        split = num_replicas * self.gradient_accumulation_steps
        if self.train_batch_size % split:
            raise errors.UserInputError(
                f"--train_batch_size={self.train_batch_size} must be divisible by the number of "
                f"replicas ({num_replicas}) x --gradient_accumulation_steps "
                f"({self.gradient_accumulation_steps}) = {split}")


def precision_policy(precision):
    """Keras' global dtype policy of `--precision` while the model is built, restored after."""
    return dtype_policy.building_under(PRECISION_POLICIES[precision])


def _dense(gradient):
    return tf.convert_to_tensor(gradient) if isinstance(gradient, tf.IndexedSlices) else gradient


class Trainer:
    """Model, optimizer, metrics and checkpoints of one task under one strategy."""

    def __init__(self, task, strategy, config):
        config.validate(strategy.num_replicas_in_sync)
        self.task, self.strategy, self.config = task, strategy, config
        self._input = replica_input.ReplicaInput(strategy)
        self.is_chief = strategy_lib.is_chief(strategy)
        with precision_policy(config.precision), strategy.scope():
            self.model = task.build_model(strategy)
            self.variables_by_name = self.model.checkpoint_variables()
            self._check_names_cover_trainable_variables()
            self.optimizer = optimization.create_optimizer(
                config.learning_rate, config.num_train_steps, config.num_warmup_steps,
                optimizer=config.optimizer, poly_power=config.poly_power,
                start_warmup_step=config.start_warmup_step,
                variable_names=self.variables_by_name,
                encoder_learning_rate_multiplier=config.encoder_learning_rate_multiplier)
            self.optimizer.build(self.model.trainable_variables)
            self._update_optimizer = self.optimizer
            if config.precision == "mixed_float16":
                self._update_optimizer = keras.optimizers.LossScaleOptimizer(self.optimizer)
                self._update_optimizer.build(self.model.trainable_variables)
            self.train_metrics = task.build_metrics()
            self.eval_metrics = task.build_metrics()
        for name in ("loss", "global_step"):
            if name in self.train_metrics:
                raise ValueError(f"{type(task).__name__}.build_metrics() must not define {name!r}: "
                                 "the loop reports it")
        self.checkpoints = checkpointing.CheckpointManager(
            config.output_dir, self.variables_by_name, self.optimizer,
            keep_checkpoint_max=config.keep_checkpoint_max, is_chief=self.is_chief,
            state_variables=self._unnamed_state(), strategy=strategy)
        # The model, the loss and the optimizer are traced as written: they branch on nothing
        # but Python values, and AutoGraph rewriting their source cost 2-3 s of every process's
        # first step. Only the step loop (`tf.range`, `break`) and accumulation need it.
        self._forward_backward = tf.autograph.experimental.do_not_convert(self._micro_batch_gradients)
        if config.enable_xla:
            self._forward_backward = tf.function(self._micro_batch_gradients, jit_compile=True,
                                                 autograph=False)
        self._train_loop_fn = tf.function(self._train_loop)
        self._eval_step_fn = tf.function(self._eval_step, reduce_retracing=True, autograph=False)
        self._summary_writer = None
        self._eval_summary_writer = None

    def _check_names_cover_trainable_variables(self):
        named = {id(v) for v in self.variables_by_name.values()}
        unnamed = [v.path for v in self.model.trainable_variables if id(v) not in named]
        if unnamed:
            raise ValueError(f"{type(self.model).__name__}.checkpoint_variables() misses the "
                             f"trainable variables {unnamed}")

    def _unnamed_state(self):
        """What the rest of the run depends on beyond the original layout's names: dropout
        seed states, a float16 loss scale (saved beside each checkpoint for exact resume)."""
        named = dict(self.variables_by_name, **self.optimizer.slot_variables())
        named["global_step"] = self.optimizer.iterations
        return checkpointing.unnamed_state(
            list(self.model.variables) + list(self._update_optimizer.variables), named)

    @property
    def global_step(self):
        return int(self.optimizer.iterations.numpy())

    @property
    def learning_rate(self):
        return float(self.optimizer.learning_rate)

    # ---------------------------------------------------------------- training

    def _micro_batch_gradients(self, features, normalizers):
        variables = self.model.trainable_variables
        with tf.GradientTape() as tape:
            outputs = prediction.as_float32(self.task.call_model(self.model, features, training=True),
                                            keep=self.task.outputs_in_compute_dtype)
            loss = self.task.compute_loss(features, outputs, normalizers)
            scaled = self._update_optimizer.scale_loss(loss)
        gradients = [_dense(g) for g in tape.gradient(scaled, variables)]
        return loss, gradients, outputs

    def _train_step(self, features):
        """One optimizer update on this replica's slice of the global batch."""
        context = tf.distribute.get_replica_context()
        normalizers = context.all_reduce(tf.distribute.ReduceOp.SUM,
                                         self.task.loss_normalizers(features))
        k = self.config.gradient_accumulation_steps
        variables = self.model.trainable_variables
        if k == 1:
            loss, gradients, outputs = self._forward_backward(features, normalizers)
            self.task.update_metrics(self.train_metrics, features, outputs)
        else:
            micro_batches = tf.nest.map_structure(
                lambda t: tf.reshape(t, tf.concat([[k, tf.shape(t)[0] // k], tf.shape(t)[1:]], 0)),
                features)
            loss = tf.constant(0.0)
            gradients = [tf.zeros_like(v) for v in variables]
            # Variables no loss reaches (the pooler under SQuAD and tagging heads) get None, as
            # with k = 1, so the optimizer leaves them alone; which ones is fixed at trace time.
            without_gradient = set()
            for i in tf.range(k):
                micro = tf.nest.map_structure(lambda t, i=i: t[i], micro_batches)
                micro_loss, micro_gradients, outputs = self._forward_backward(micro, normalizers)
                self.task.update_metrics(self.train_metrics, micro, outputs)
                loss += micro_loss
                without_gradient.update(j for j, m in enumerate(micro_gradients) if m is None)
                gradients = [g if m is None else g + m for g, m in zip(gradients, micro_gradients)]
            gradients = [None if j in without_gradient else g for j, g in enumerate(gradients)]
        if self.config.precision == "mixed_float16":
            # The loss scaler decides on one replica's gradients; make a non-finite gradient
            # anywhere non-finite everywhere so every replica skips the same step.
            finite = tf.reduce_all([tf.reduce_all(tf.math.is_finite(g)) for g in gradients
                                    if g is not None])
            non_finite_replicas = context.all_reduce(tf.distribute.ReduceOp.SUM,
                                                     1.0 - tf.cast(finite, tf.float32))
            gradients = [None if g is None else
                         tf.where(non_finite_replicas == 0.0, g, tf.fill(tf.shape(g), np.nan))
                         for g in gradients]
        tf.autograph.experimental.do_not_convert(self._update_optimizer.apply)(gradients, variables)
        return context.all_reduce(tf.distribute.ReduceOp.SUM, loss)

    def _train_loop(self, iterator, num_steps):
        """Up to `num_steps` steps; stops at the first non-finite loss."""
        steps_done = tf.constant(0)
        loss_sum = tf.constant(0.0)
        bad_loss = tf.constant(0.0)
        for _ in tf.range(num_steps):
            per_replica = self._input.run(self._train_step, next(iterator))
            loss = self.strategy.experimental_local_results(per_replica)[0]
            if not tf.math.is_finite(loss):
                bad_loss = loss
                break
            loss_sum += loss
            steps_done += 1
        return steps_done, loss_sum, bad_loss

    def _train_dataset(self, skip_steps=0):
        def dataset_fn(input_context, batch_size):
            dataset = self.task.train_dataset(input_context, batch_size)
            if skip_steps:  # resume without a checkpointable iterator: drop what was consumed
                replicas = (input_context.num_replicas_in_sync
                            // input_context.num_input_pipelines)
                dataset = dataset.skip(skip_steps * replicas)
            return dataset
        return self._input.datasets_from_function(dataset_fn, self.config.train_batch_size)

    def restore_or_initialize(self):
        """Resume from the latest checkpoint in output_dir, else warm start from init_checkpoint."""
        latest = self.checkpoints.restore_latest()  # skips damaged ones, warning
        if latest:
            step = self.global_step
            logging.info("Resumed from %s: global_step %d, learning rate %.6g", latest, step,
                         self.learning_rate)
        elif self.config.init_checkpoint:
            report = checkpointing.warm_start(self.variables_by_name, self.config.init_checkpoint,
                                              self.config.init_from_group0)
            logging.info("Warm start from %s: %d variables", self.config.init_checkpoint, len(report.mapped))
        return self.global_step

    def train_iterator(self, skip_steps=0):
        """An iterator over the distributed training batches (for `train_steps`), past the
        batches of `skip_steps` steps."""
        return iter(self._train_dataset(skip_steps))

    def train_steps(self, iterator, num_steps):
        """`num_steps` updates in one tf.function call, no checkpoint or log; returns the mean
        loss. Raises NonFiniteLossError naming the step of a NaN/Inf loss."""
        step = self.global_step
        steps_done, loss_sum, bad_loss = self._train_loop_fn(iterator, tf.constant(num_steps))
        steps_done = int(steps_done)
        if steps_done < num_steps:
            bad_step = step + steps_done
            raise NonFiniteLossError(
                f"loss became {float(bad_loss)} at global_step {bad_step} (the update that "
                f"would have made step {bad_step + 1}); stopped without saving. The last good "
                f"checkpoint is {self.checkpoints.latest_checkpoint()}")
        return float(loss_sum) / num_steps

    def train(self, on_checkpoint=None):
        """Trains to num_train_steps; returns the last loop's logged scalars.

        `on_checkpoint(step, path)`, if given, runs after each checkpoint is written (before
        training goes on, so before `keep_checkpoint_max` can prune it): the fine-tuning flow
        scores every checkpoint this way. The chief holds the output directory's `train` lock
        throughout (a second trainer on it is refused) and first removes the temporary files a
        killed run left there."""
        if not self.is_chief:
            return self._train(on_checkpoint)
        with output_lock.hold(self.config.output_dir, "train"):
            removed = (io_utils.remove_stale_temporaries(self.config.output_dir)
                       + self.checkpoints.remove_stale_temporaries())
            if removed:
                logging.warning("Removed %d temporary files a killed run left: %s", len(removed),
                                ", ".join(removed))
            return self._train(on_checkpoint)

    def _train(self, on_checkpoint):
        config = self.config
        start_step = self.restore_or_initialize()
        if start_step >= config.num_train_steps:
            logging.info("global_step %d >= num_train_steps %d: nothing to train", start_step,
                         config.num_train_steps)
            return {}
        iterator = self.checkpoints.resumed_input(self.train_iterator)  # saved with checkpoints
        step, scalars = start_step, {}
        measured_from = None  # (time, step) at the end of the first loop, which includes tracing
        # A loop of iterations_per_loop steps logs once at its end; the heartbeat logs the
        # step and ETA in between, so a long loop on a slow machine never looks hung.
        with progress.Heartbeat("Training", lambda: self.global_step,
                                config.num_train_steps) as heartbeat:
            while step < config.num_train_steps:
                to_save = config.save_checkpoints_steps - step % config.save_checkpoints_steps
                num_steps = min(config.iterations_per_loop, to_save, config.num_train_steps - step)
                loop_start = time.time()
                mean_loss = self.train_steps(iterator, num_steps)
                elapsed = time.time() - loop_start
                step = self.global_step
                scalars = self._loop_scalars(mean_loss, num_steps, elapsed)
                self._log(step, scalars, measured_from)
                measured_from = measured_from or (time.time(), step)
                heartbeat.logged()
                if step % config.save_checkpoints_steps == 0 or step == config.num_train_steps:
                    path = self.checkpoints.save(step)
                    logging.info("Saved %s", path)
                    if on_checkpoint is not None:
                        on_checkpoint(step, path)
        return scalars

    def _loop_scalars(self, mean_loss, num_steps, elapsed):
        scalars = {"loss": mean_loss}
        for name, metric in self.train_metrics.items():
            scalars[name] = float(metric.result())
            metric.reset_state()
        scalars["learning_rate"] = self.learning_rate
        scalars["examples_per_second"] = num_steps * self.config.train_batch_size / elapsed
        scalars["steps_per_second"] = num_steps / elapsed
        return scalars

    def _log(self, step, scalars, measured_from):
        """The loop's line. Its ETA comes from the steps since `measured_from` (the end of the
        run's first loop): the first loop's time is mostly tracing the step function, which
        would inflate the estimate many times over, so its own line says `ETA ?`."""
        total = self.config.num_train_steps
        eta = "?"
        if step >= total:
            eta = datetime.timedelta(0)
        elif measured_from is not None:
            rate = (step - measured_from[1]) / max(time.time() - measured_from[0], 1e-9)
            eta = datetime.timedelta(seconds=round((total - step) / rate)) if rate > 0 else "?"
        values = ", ".join(f"{k} = {v:.6g}" for k, v in scalars.items())
        logging.info("step %d/%d: %s, ETA %s", step, total, values, eta)
        if self.is_chief:
            self._write_summaries(self.config.output_dir, "_summary_writer", step, scalars)

    def _write_summaries(self, directory, attribute, step, scalars):
        writer = getattr(self, attribute)
        if writer is None:
            writer = tf.summary.create_file_writer(directory)
            setattr(self, attribute, writer)
        with writer.as_default(step=step):
            for name, value in scalars.items():
                # tf.summary.scalar needs the tensorboard package; the raw op with the scalars
                # plugin's metadata writes the same event without it.
                tf.summary.write(name, tf.constant(value, tf.float32),
                                 metadata=_SCALAR_METADATA)
        writer.flush()

    # ---------------------------------------------------------------- evaluation

    def _eval_step(self, features):
        def replica_fn(features):
            context = tf.distribute.get_replica_context()
            normalizers = context.all_reduce(tf.distribute.ReduceOp.SUM,
                                             self.task.loss_normalizers(features))
            outputs = prediction.as_float32(self.task.call_model(self.model, features, training=False))
            loss = self.task.compute_loss(features, outputs, normalizers)
            self.task.update_metrics(self.eval_metrics, features, outputs)
            return context.all_reduce(tf.distribute.ReduceOp.SUM, loss)
        per_replica = self._input.run(replica_fn, features)
        return self.strategy.experimental_local_results(per_replica)[0]

    def evaluate(self, batch_size, max_steps=None):
        """Metrics of the current weights over the eval data (`max_steps` batches at most).

        `loss` is the mean of the per-batch losses (as the original's estimator); the task's
        metrics accumulate over all examples; `global_step` is the weights' step.
        """
        dataset = self._input.datasets_from_function(self.task.eval_dataset, batch_size)
        for metric in self.eval_metrics.values():
            metric.reset_state()
        losses = []
        for features in dataset:
            if max_steps is not None and len(losses) >= max_steps:
                break
            losses.append(float(self._eval_step_fn(features)))
        if not losses:
            raise ValueError(f"{type(self.task).__name__}.eval_dataset yielded no batch")
        results = {name: float(metric.result()) for name, metric in self.eval_metrics.items()}
        results["loss"] = float(np.mean(losses))
        results["global_step"] = self.global_step
        return results

    def write_eval_summaries(self, results):
        """Eval scalars to `output_dir/eval` (TensorBoard), as the original estimator. Tags
        drop the `eval_` of the results' names (`eval_loss` → `loss`), so each evaluation curve
        overlays the training curve of the same name."""
        if self.is_chief:
            scalars = {name.removeprefix("eval_"): value for name, value in results.items()
                       if name != "global_step"}
            self._write_summaries(os.path.join(self.config.output_dir, "eval"),
                                  "_eval_summary_writer", results["global_step"], scalars)
