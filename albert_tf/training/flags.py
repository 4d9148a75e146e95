"""The absl flags every training script shares, defined once, with the original names.

The original scripts define the same flags with different defaults (run_pretraining: batch 4096,
LAMB, lr 0.00176; run_classifier: batch 32, AdamW, 5e-5; ...), so each group is a function that
takes the script's defaults:

    from albert_tf.training import flags as training_flags
    training_flags.define_training_flags(train_batch_size=32, learning_rate=5e-5,
                                         optimizer="adamw", save_checkpoints_steps=1000)
    ...
    strategy = training_flags.strategy_from_flags(FLAGS)
    config = training_flags.training_config_from_flags(FLAGS, num_train_steps=FLAGS.train_step,
                                                       num_warmup_steps=FLAGS.warmup_step)

`define_training_flags` also defines the distribution flags (`--use_tpu`, `--tpu_name`,
`--tpu_zone`, `--gcp_project`, `--master`, `--num_tpu_cores`, `--distribution_strategy`,
`--cpu_replicas`) and the
performance flags (`--precision`, `--enable_xla`, `--gradient_accumulation_steps`). Step-count
flags differ by script (`num_train_steps`, `train_step`, `num_train_epochs`) and stay in the
scripts, which pass the resulting counts to `training_config_from_flags`.
"""

import dataclasses
import os

from absl import app
from absl import flags
import keras

from albert_tf import cli
from albert_tf.config import AlbertConfig
from albert_tf.training import optimization
from albert_tf.training import fine_tuning, length_buckets, loop, strategy as strategy_lib

PRECISIONS = ("float32", "mixed_bfloat16", "mixed_float16")


def define_distribution_flags(num_tpu_cores=8, flag_values=flags.FLAGS):
    """The original TPU flags plus `--distribution_strategy` (new: auto-detected by default)."""
    define = cli.Definer(flag_values)
    define.bool("use_tpu", False, "Whether to use TPU (TPUStrategy). Also turns on the "
                "one-hot embedding lookup, as the original.")
    define.string("tpu_name", None, "The Cloud TPU to use for training: the name used when "
                  "creating the Cloud TPU, or a grpc://ip.address.of.tpu:8470 url.")
    define.string("tpu_zone", None, "GCE zone of the Cloud TPU (detected when not given).")
    define.string("gcp_project", None, "GCP project of the Cloud TPU (detected when not "
                  "given).")
    define.string("master", None, "TPU master address; used when --tpu_name is not given.")
    define.integer("num_tpu_cores", num_tpu_cores, "Number of TPU cores (replicas) to use "
                   "with --use_tpu.", lower_bound=1)
    define.enum("distribution_strategy", "auto", strategy_lib.STRATEGIES,
                "tf.distribute strategy. auto: TPU with --use_tpu, multi-worker mirrored "
                "when TF_CONFIG names several workers, mirrored over 2+ local GPUs, one "
                "device otherwise.")
    define.integer("cpu_replicas", 1, "Split the CPU into this many logical devices and train "
                   "data-parallel over them (MirroredStrategy), each op on cores / N threads; "
                   "the same global batch, losses and checkpoints as 1 (new). Meant for small "
                   "models whose ops gain little from more threads; on a loaded machine it "
                   "was slower (bench/RESULTS.md): measure with "
                   "bench/bench_small_pretraining.py first.", lower_bound=1)


def define_performance_flags(flag_values=flags.FLAGS):
    """New flags (the original ran float32 on TPU through TPUEstimator's own XLA)."""
    define = cli.Definer(flag_values)
    define.enum("precision", "float32", PRECISIONS,
                "Keras precision policy. mixed_float16 uses dynamic loss scaling; variables "
                "and optimizer state stay float32 in every case.")
    define.bool("enable_xla", False, "Compile each training step with XLA (jit_compile).")
    define.integer("gradient_accumulation_steps", 1,
                   "Split each global batch into this many micro-batches per replica and "
                   "sum their gradients before one update: the same update as one batch of "
                   "--train_batch_size, in less memory.", lower_bound=1)


def define_training_flags(*, train_batch_size, learning_rate, optimizer, save_checkpoints_steps,
                          iterations_per_loop=1000, keep_checkpoint_max=5, eval_batch_size=None,
                          do_train=None, do_eval=None, num_tpu_cores=8,
                          output_dir_required=True, flag_values=flags.FLAGS):
    """The shared training flags with the calling script's original defaults.

    `eval_batch_size`, `do_train`, `do_eval`: None means the script does not have the flag.
    """
    define = cli.Definer(flag_values)
    define.string("output_dir", None, "The output directory where the model checkpoints "
                  "will be written.")
    if output_dir_required:
        flags.mark_flag_as_required("output_dir", flag_values=flag_values)
    define.string("init_checkpoint", None, "Initial checkpoint (usually from a pre-trained "
                  "ALBERT model), matched by variable name; heads may be missing.")
    define.bool("init_from_group0", False, "Initialise every layer group from the "
                "checkpoint's group_0 (growing a shared model into a less-shared one).")
    if do_train is not None:
        define.bool("do_train", do_train, "Whether to run training.")
    if do_eval is not None:
        define.bool("do_eval", do_eval, "Whether to run eval on the dev set.")
    define.integer("train_batch_size", train_batch_size, "Total (global) batch size for "
                   "training, over all replicas and accumulation micro-batches.", lower_bound=1)
    if eval_batch_size is not None:
        define.integer("eval_batch_size", eval_batch_size, "Total batch size for eval.",
                       lower_bound=1)
    define.enum("optimizer", optimizer, optimization.OPTIMIZERS, "The optimizer for "
                "training.")
    define.float("learning_rate", learning_rate, "The initial learning rate (> 0).")
    must_be_positive("learning_rate", flag_values)
    define.float("poly_power", 1.0, "The power of the polynomial decay (> 0).")
    must_be_positive("poly_power", flag_values)
    define.integer("start_warmup_step", 0, "The starting step of warmup.", lower_bound=0)
    define.integer("save_checkpoints_steps", save_checkpoints_steps,
                   "How often to save the model checkpoint.", lower_bound=1)
    define.integer("keep_checkpoint_max", keep_checkpoint_max,
                   "How many checkpoints to keep (the newest; model.ckpt-best is separate).",
                   lower_bound=1)
    define.integer("iterations_per_loop", iterations_per_loop,
                   "How many steps to run inside one tf.function call (one log line each).",
                   lower_bound=1)
    define_distribution_flags(num_tpu_cores, flag_values)
    define_performance_flags(flag_values)


def define_fine_tuning_flags(*, do_predict_help, max_seq_length, predict_batch_size,
                             data_dir_help=None, train_step=None, warmup_step=None,
                             eval_batch_size=None, do_train=False, do_eval=False,
                             vocab_file_help=None, required=("data_dir", "albert_config_file"),
                             flag_values=flags.FLAGS, **training_defaults):
    """The flags every fine-tuning script shares (the original's names), with the script's
    defaults; `training_defaults` go to `define_training_flags`.

    None leaves a flag out, for a script whose original has none: run_squad.py reads
    --train_file/--predict_file instead of --data_dir, counts epochs instead of --train_step
    and --warmup_step, and evaluates with --do_predict and --predict_batch_size."""
    define = cli.Definer(flag_values, frames_up=2)  # the calling script's own flags
    if data_dir_help is not None:
        define.string("data_dir", None, data_dir_help)
    define.string("albert_config_file", None, "The config json file corresponding to the "
                  "pre-trained ALBERT model. This specifies the model architecture.")
    define.string("vocab_file", None, vocab_file_help or "The vocabulary file that the ALBERT "
                  "model was trained on (WordPiece; used when --spm_model_file is not given).")
    define.string("spm_model_file", None, "The model file for sentence piece tokenization.")
    define.string("albert_hub_module_handle", None, "A LOCAL directory holding an unpacked "
                  "TF1 Hub ALBERT module; its variables are used as --init_checkpoint. (Hub "
                  "URLs cannot be fetched; the architecture comes from --albert_config_file.)")
    define.bool("do_lower_case", True, "Whether to lower case the input text. Should be True "
                "for uncased models and False for cased models.")
    define.integer("max_seq_length", max_seq_length, "The maximum total input sequence length "
                   "after tokenization. Sequences longer than this will be truncated, and "
                   "sequences shorter than this will be padded.", lower_bound=3)
    define.bool("do_predict", False, do_predict_help)
    define.integer("predict_batch_size", predict_batch_size, "Total batch size for predict.",
                   lower_bound=1)
    if train_step is not None:
        define.integer("train_step", train_step, "Total number of training steps to perform.",
                       lower_bound=0)
    if warmup_step is not None:
        define.integer("warmup_step", warmup_step, "Number of steps to perform linear "
                       "learning rate warmup for.", lower_bound=0)
    define.integer("seed", None, "Seed of weight initialisation, dropout and shuffling (new; "
                   "default: unseeded). Results still differ between seeds: the paper reports "
                   "the median of 5 runs.")
    define.bool("allow_random_init", False, "Allow --do_train without --init_checkpoint "
                "(fine-tuning a randomly initialised model; normally a mistake).")
    define.float("encoder_learning_rate_multiplier", 1.0, "The pretrained encoder's variables "
                 "(bert/...) step at --learning_rate times this, the task head at "
                 "--learning_rate (new; 1: one rate, as the original; 0: a frozen encoder).",
                 lower_bound=0)
    define_training_flags(flag_values=flag_values, do_train=do_train, do_eval=do_eval,
                          eval_batch_size=eval_batch_size, **training_defaults)
    define_evaluation_flags(flag_values=flag_values)
    define_length_bucket_flag(flag_values)
    for name in required:
        flags.mark_flag_as_required(name, flag_values=flag_values)


def define_evaluation_flags(eval_timeout_secs=7200, flag_values=flags.FLAGS):
    """New: the original's evaluate-every-checkpoint loops could poll for ever."""
    define = cli.Definer(flag_values)
    define.float("eval_timeout_secs", eval_timeout_secs,
                 "Stop evaluating when no new checkpoint has appeared for this many seconds "
                 "(evaluation also stops once the last training step is evaluated).",
                 lower_bound=0)


def define_length_bucket_flag(flag_values=flags.FLAGS):
    """New: fine-tuning batches need not be padded to --max_seq_length (see
    `training.length_buckets`)."""
    cli.Definer(flag_values).string(
        "length_buckets", "auto",
        "Cut each fine-tuning, evaluation and prediction batch to its longest row, rounded up to "
        "one of these lengths: 'auto' (powers of two from 16, then --max_seq_length; off on "
        "TPU, which needs fixed shapes), 'off' (always pad to --max_seq_length, as the "
        "original), or ascending lengths such as 64,128,256. Results equal the padded run's up "
        "to float rounding.")


_EXPORT_PRECISION_HELP = {
    "float32": "float32",
    "bfloat16": "bfloat16 (the same signatures, float32 inputs and outputs, matrix products in "
                "bfloat16)",
    "int8": "int8 (the float32 SavedModel plus a dynamic-range int8 model.tflite of the "
            "`{signature}` signature in the version directory, served by serve.py and TF "
            "Serving with --prefer_tflite_model)",
}


def define_export_flags(*, precisions, tflite_signature, text_signature, export_dir_help,
                        raw_text_note="", flag_values=flags.FLAGS):
    """--export_dir, --export_precision and --export_raw_text (new), one definition for every
    task that exports; `precisions`: the task's (a subset of float32, bfloat16, int8),
    `tflite_signature`: the signature its int8 model.tflite holds, `text_signature`: its
    raw-text signature."""
    define = cli.Definer(flag_values, frames_up=2)  # the calling script's own flags
    define.string("export_dir", None, export_dir_help)
    define.enum("export_precision", "float32", precisions, "Precision of the export (new): "
                + "; ".join(_EXPORT_PRECISION_HELP[choice].format(signature=tflite_signature)
                            for choice in precisions) + ".")
    define.bool("export_raw_text", True, f"Include the raw-text `{text_signature}` signature "
                "(in-graph tokenizer) in the export (new). It needs tensorflow_text wherever "
                "the model is served; with false the SavedModel holds no custom ops (stock TF "
                f"Serving, saved_model_cli){raw_text_note}.")


def batching_from_flags(flag_values, strategy, keep_padding=None):
    """The run's `length_buckets.Batching`: --length_buckets and --max_seq_length under
    `strategy` (`keep_padding`: why the model needs full padding, if it does)."""
    return length_buckets.Batching.resolve(flag_values.length_buckets,
                                           flag_values.max_seq_length, strategy, keep_padding)


def must_be_positive(name, flag_values=flags.FLAGS):
    """A number flag that only makes sense above 0 (a learning rate <= 0 ascends the loss)."""
    flags.register_validator(name, lambda value: value is None or value > 0,
                             message=f"--{name} must be > 0", flag_values=flag_values)


def strategy_from_flags(flag_values):
    """The tf.distribute strategy the distribution flags ask for."""
    return strategy_lib.resolve_strategy(
        distribution_strategy=flag_values.distribution_strategy, use_tpu=flag_values.use_tpu,
        tpu_name=flag_values.tpu_name, tpu_zone=flag_values.tpu_zone,
        gcp_project=flag_values.gcp_project, master=flag_values.master,
        num_tpu_cores=flag_values.num_tpu_cores, cpu_replicas=flag_values.cpu_replicas)


def flow_from_flags(flag_values):
    """(`fine_tuning.FlowOptions`, `loop.TrainingConfig`) of a fine-tuning script's flags
    (`define_fine_tuning_flags` with --train_step and --warmup_step)."""
    init_checkpoint = init_checkpoint_from_flags(flag_values)
    options = cli.dataclass_from_flags(fine_tuning.FlowOptions, flag_values,
                                       init_checkpoint=init_checkpoint)
    config = training_config_from_flags(
        flag_values, num_train_steps=flag_values.train_step,
        num_warmup_steps=flag_values.warmup_step, init_checkpoint=init_checkpoint)
    return options, config


def training_config_from_flags(flag_values, *, num_train_steps, num_warmup_steps, **overrides):
    """A `loop.TrainingConfig` from the script's flags named like its fields, plus the
    script's step counts and `overrides`."""
    return cli.dataclass_from_flags(loop.TrainingConfig, flag_values,
                                    num_train_steps=num_train_steps,
                                    num_warmup_steps=num_warmup_steps, **overrides)


def init_checkpoint_from_flags(flag_values):
    """--init_checkpoint, or --albert_hub_module_handle when it names a local unpacked TF1 Hub
    module (its `variables/variables` load like a checkpoint); nothing is downloaded."""
    handle = flag_values.albert_hub_module_handle
    if not handle:
        return flag_values.init_checkpoint
    if "://" in handle or not os.path.isdir(handle):
        raise app.UsageError(
            f"--albert_hub_module_handle is not supported as {handle}: only a local directory "
            "of an unpacked TF1 Hub module can be used (nothing is downloaded); or pass "
            "--init_checkpoint")
    if flag_values.init_checkpoint:
        raise app.UsageError("give --init_checkpoint or --albert_hub_module_handle, not both")
    return handle


@dataclasses.dataclass(frozen=True)
class FineTuningStart:
    """What every fine-tuning script sets up from its flags before it builds its job."""

    albert_config: AlbertConfig
    strategy: object
    batching: length_buckets.Batching


def start_fine_tuning(flag_values, actions, keep_padding=None):
    """The fine-tuning scripts' one preamble: refuses a run in which none of `actions` (flag
    names: do_train, ..., export_dir) is set, seeds Keras with --seed, reads
    --albert_config_file and resolves the strategy and the run's batching (`keep_padding`: as
    `batching_from_flags`)."""
    if not any(flag_values[name].value for name in actions):
        raise app.UsageError(
            "At least one of " + ", ".join(f"--{name}" for name in actions[:-1])
            + f" or --{actions[-1]} must be given.")
    if flag_values.seed is not None:
        keras.utils.set_random_seed(flag_values.seed)
    albert_config = AlbertConfig.from_json_file(flag_values.albert_config_file)
    strategy = strategy_from_flags(flag_values)
    return FineTuningStart(albert_config, strategy,
                           batching_from_flags(flag_values, strategy, keep_padding))


def run_flow(job, flag_values, strategy):
    """`fine_tuning.train_evaluate_predict` of `job` as the script's flags say (`flow_from_flags`)."""
    return fine_tuning.train_evaluate_predict(job, *flow_from_flags(flag_values), strategy)
