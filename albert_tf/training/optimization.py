"""The original ALBERT optimizers (AdamW and LAMB) and learning-rate schedule, as Keras 3 objects.

Keras' and TF-Addons' AdamW/LAMB apply Adam bias correction and decay the weights outside the
update; the original does neither, so these are written out (`optimization.py` and
`lamb_optimizer.py` of google-research/ALBERT):

    m ← β1·m + (1−β1)·g          v ← β2·v + (1−β2)·g²        (no bias correction)
    u ← m / (√v + ε)  (+ wd·w unless the name matches an exclusion)
    AdamW:  w ← w − lr·u
    LAMB:   w ← w − r·lr·u,  r = ‖w‖/‖u‖ if both > 0 else 1   (r = 1 for excluded names)

The exclusions are regular expressions searched (`re.search`) in the ORIGINAL checkpoint name of
each variable (`bert/encoder/.../LayerNorm/gamma`, `cls/predictions/output_bias`), which Keras
variable paths do not carry: pass the model's `checkpoint_variables()` map as `variable_names`.
The same names give the slots their original checkpoint names, `<name>/adam_m` and
`<name>/adam_v` (both optimizers, as the original), through `slot_variables()`.

Gradients are clipped to global norm 1.0 after they are summed over replicas, i.e. on the
gradient of the global batch, so the update does not depend on the number of replicas.
"""

import collections
import re

import keras
import tensorflow as tf

ORIGINAL_EXCLUSIONS = ("LayerNorm", "layer_norm", "bias")
OPTIMIZERS = ("adamw", "lamb")
# The pretrained encoder's variables in the original layout (embeddings, transformer, pooler);
# task heads are `output_weights`/`output_bias` or under `cls/`.
ENCODER_PATTERN = r"^bert/"


class WarmupPolynomialDecay(keras.optimizers.schedules.LearningRateSchedule):
    """The original schedule: polynomial decay from step 0, replaced by linear warmup at first.

    lr = init_lr·(1 − min(step, num_train_steps)/num_train_steps)^poly_power, then, if
    num_warmup_steps > 0 and step − start_warmup_step < num_warmup_steps,
    lr = init_lr·(step − start_warmup_step)/num_warmup_steps (negative before
    start_warmup_step, as in the original).
    """

    def __init__(self, init_lr, num_train_steps, num_warmup_steps=0, poly_power=1.0,
                 start_warmup_step=0):
        if num_train_steps <= 0:
            raise ValueError(f"num_train_steps must be > 0, got {num_train_steps}")
        if num_warmup_steps < 0:
            raise ValueError(f"num_warmup_steps must be >= 0, got {num_warmup_steps}")
        self.init_lr = float(init_lr)
        self.num_train_steps = int(num_train_steps)
        self.num_warmup_steps = int(num_warmup_steps)
        self.poly_power = float(poly_power)
        self.start_warmup_step = int(start_warmup_step)

    def __call__(self, step):
        step = tf.cast(step, tf.float32)
        decay_fraction = tf.minimum(step, float(self.num_train_steps)) / self.num_train_steps
        decayed = self.init_lr * tf.pow(1.0 - decay_fraction, self.poly_power)
        if self.num_warmup_steps == 0:
            return decayed
        warmup_steps_done = step - float(self.start_warmup_step)
        warmup = self.init_lr * warmup_steps_done / float(self.num_warmup_steps)
        return tf.where(warmup_steps_done < float(self.num_warmup_steps), warmup, decayed)

    def get_config(self):
        return {
            "init_lr": self.init_lr, "num_train_steps": self.num_train_steps,
            "num_warmup_steps": self.num_warmup_steps, "poly_power": self.poly_power,
            "start_warmup_step": self.start_warmup_step,
        }


def _matches_any(patterns, name):
    return any(re.search(pattern, name) is not None for pattern in patterns)


def _sum_over_replicas(grads):
    """The gradients summed over the replicas in one collective (one pack of all of them):
    on logical CPU replicas each collective is a hand-off between threads, which a loaded
    machine makes slow. None (a variable without gradient) stays None."""
    context = tf.distribute.get_replica_context()
    if context is None or context.num_replicas_in_sync == 1:
        return grads
    present = [index for index, grad in enumerate(grads) if grad is not None]
    one_pack = tf.distribute.experimental.CommunicationOptions(bytes_per_pack=1 << 40)
    reduced = context.all_reduce(tf.distribute.ReduceOp.SUM, [grads[i] for i in present],
                                 options=one_pack)
    summed = list(grads)
    for index, grad in zip(present, reduced):
        summed[index] = grad
    return summed


class AdamWeightDecay(keras.optimizers.Optimizer):
    """The original `AdamWeightDecayOptimizer`: Adam without bias correction, decoupled decay.

    Args:
      learning_rate: float or schedule (e.g. `WarmupPolynomialDecay`).
      variable_names: `{original checkpoint name: variable}` (a model's `checkpoint_variables()`).
        Exclusions are matched against, and slots named after, these names. Variables not in the
        map fall back to their Keras path.
      clip_norm: global-norm clipping of the replica-summed gradients (None: no clipping).
      learning_rate_multipliers: `((pattern, multiplier), ...)`: a variable whose name matches a
        pattern (the first that matches) steps at the learning rate times its multiplier; e.g.
        `((ENCODER_PATTERN, 0.1),)` fine-tunes the pretrained encoder ten times slower than the
        new head (new; the original has one rate).
    """

    _layer_adaptation = False

    def __init__(self, learning_rate, weight_decay_rate=0.01, beta_1=0.9, beta_2=0.999,
                 epsilon=1e-6, exclude_from_weight_decay=ORIGINAL_EXCLUSIONS,
                 variable_names=None, clip_norm=1.0, learning_rate_multipliers=(), name=None,
                 **kwargs):
        super().__init__(learning_rate=learning_rate, name=name, **kwargs)
        self.weight_decay_rate = float(weight_decay_rate)
        self.beta_1 = float(beta_1)
        self.beta_2 = float(beta_2)
        self.epsilon = float(epsilon)
        self.exclude_from_weight_decay = tuple(exclude_from_weight_decay or ())
        self.clip_norm = clip_norm
        self.learning_rate_multipliers = tuple((pattern, float(multiplier))
                                               for pattern, multiplier in learning_rate_multipliers)
        self._names_by_key = {}
        self.name_variables(variable_names or {})

    def name_variables(self, variable_names):
        """Adds `{original checkpoint name: variable}` (a model's `checkpoint_variables()`)
        to the names exclusions and slots go by; before the optimizer is built (a Keras model's
        `compile` does it for an optimizer made without them)."""
        if self.built:
            raise ValueError("name the variables before the optimizer is built on them")
        for original_name, variable in variable_names.items():
            self._names_by_key[self._var_key(variable)] = original_name

    def original_name(self, variable):
        """The checkpoint name this optimizer uses for `variable` (its Keras path if unnamed)."""
        return self._names_by_key.get(self._var_key(variable), getattr(variable, "path", None)
                                      or variable.name.split(":")[0])

    def build(self, var_list):
        if self.built:
            return
        super().build(var_list)
        self._adam_m, self._adam_v = self.add_optimizer_variables(var_list, ["adam_m", "adam_v"])
        self._slot_owner_names = [self.original_name(variable) for variable in var_list]
        duplicates = [name for name, count in
                      collections.Counter(self._slot_owner_names).items() if count > 1]
        if duplicates:
            raise ValueError(f"two trainable variables share the checkpoint name {duplicates[0]!r}")
        self._decays = [self.weight_decay_rate > 0 and
                        not _matches_any(self.exclude_from_weight_decay, name)
                        for name in self._slot_owner_names]
        self._adapts = [self._uses_layer_adaptation(name) for name in self._slot_owner_names]
        self._rate_multipliers = [self._rate_multiplier(name) for name in self._slot_owner_names]

    def _rate_multiplier(self, name):
        for pattern, multiplier in self.learning_rate_multipliers:
            if re.search(pattern, name) is not None:
                return multiplier
        return 1.0

    def _uses_layer_adaptation(self, name):
        del name
        return False

    def slot_variables(self):
        """Ordered `{"<name>/adam_m": slot, "<name>/adam_v": slot}` in the original layout."""
        if not self.built:
            raise ValueError("the optimizer has no slots before it is built on the model's variables")
        slots = collections.OrderedDict()
        for name, m, v in zip(self._slot_owner_names, self._adam_m, self._adam_v):
            slots[f"{name}/adam_m"] = m
            slots[f"{name}/adam_v"] = v
        return slots

    def _clip_gradients(self, grads):
        # Clipping happens in _backend_update_step, after the cross-replica sum.
        return grads

    def _backend_update_step(self, grads, trainable_variables, learning_rate):
        variables = [v.value if isinstance(v, keras.Variable) else v for v in trainable_variables]
        grads = [tf.convert_to_tensor(g) if isinstance(g, tf.IndexedSlices) else g for g in grads]
        grads = _sum_over_replicas(grads)
        if self.clip_norm is not None:
            grads, _ = tf.clip_by_global_norm(grads, self.clip_norm)
        tf.__internal__.distribute.interim.maybe_merge_call(
            self._distributed_tf_update_step, self._distribution_strategy,
            list(zip(grads, variables)), learning_rate)

    def update_step(self, gradient, variable, learning_rate):
        index = self._get_variable_index(variable)
        m, v = self._adam_m[index], self._adam_v[index]
        gradient = tf.cast(gradient, variable.dtype)
        next_m = self.beta_1 * m + (1.0 - self.beta_1) * gradient
        next_v = self.beta_2 * v + (1.0 - self.beta_2) * tf.square(gradient)
        update = next_m / (tf.sqrt(next_v) + self.epsilon)
        if self._decays[index]:
            update += self.weight_decay_rate * variable
        ratio = 1.0
        if self._adapts[index]:
            w_norm = tf.norm(variable)
            u_norm = tf.norm(update)
            ratio = tf.where(w_norm > 0.0, tf.where(u_norm > 0.0, w_norm / u_norm, 1.0), 1.0)
        self.assign(m, next_m)
        self.assign(v, next_v)
        rate = tf.cast(learning_rate, variable.dtype) * self._rate_multipliers[index]
        self.assign_sub(variable, ratio * rate * update)

    def get_config(self):
        config = super().get_config()
        config.update({
            "weight_decay_rate": self.weight_decay_rate, "beta_1": self.beta_1,
            "beta_2": self.beta_2, "epsilon": self.epsilon,
            "exclude_from_weight_decay": list(self.exclude_from_weight_decay),
            "clip_norm": self.clip_norm,
            "learning_rate_multipliers": [list(pair) for pair in self.learning_rate_multipliers],
        })
        return config


class LAMB(AdamWeightDecay):
    """The original `LAMBOptimizer`: `AdamWeightDecay` plus the layer-wise trust ratio ‖w‖/‖u‖.

    `exclude_from_layer_adaptation` defaults to the weight-decay exclusions, as the original.
    """

    def __init__(self, learning_rate, exclude_from_layer_adaptation=None, **kwargs):
        super().__init__(learning_rate, **kwargs)
        if exclude_from_layer_adaptation is None:
            exclude_from_layer_adaptation = self.exclude_from_weight_decay
        self.exclude_from_layer_adaptation = tuple(exclude_from_layer_adaptation)

    def _uses_layer_adaptation(self, name):
        return not _matches_any(self.exclude_from_layer_adaptation, name)

    def get_config(self):
        config = super().get_config()
        config["exclude_from_layer_adaptation"] = list(self.exclude_from_layer_adaptation)
        return config


def create_optimizer(init_lr, num_train_steps, num_warmup_steps, optimizer="adamw",
                     poly_power=1.0, start_warmup_step=0, variable_names=None,
                     weight_decay_rate=0.01, clip_norm=1.0, encoder_learning_rate_multiplier=1.0):
    """The original `create_optimizer` (minus the loss): schedule + LAMB or AdamW.

    The step is the optimizer's `iterations` counter, which is the checkpoint's `global_step`.
    `encoder_learning_rate_multiplier` scales the rate of the pretrained encoder's variables
    (ENCODER_PATTERN) against the task head's (new).
    """
    if optimizer not in OPTIMIZERS:
        raise ValueError(f"--optimizer must be one of {', '.join(OPTIMIZERS)}, got {optimizer!r}")
    schedule = WarmupPolynomialDecay(init_lr, num_train_steps, num_warmup_steps,
                                     poly_power=poly_power, start_warmup_step=start_warmup_step)
    optimizer_class = LAMB if optimizer == "lamb" else AdamWeightDecay
    return optimizer_class(schedule, weight_decay_rate=weight_decay_rate,
                           variable_names=variable_names, clip_norm=clip_norm,
                           learning_rate_multipliers=(
                               ((ENCODER_PATTERN, encoder_learning_rate_multiplier),)
                               if encoder_learning_rate_multiplier != 1.0 else ()),
                           name=optimizer)
