"""Fine-tune and evaluate ALBERT on SQuAD v1.1, or v2.0 with --version_2_with_negative.

One script for the original run_squad_v1.py and run_squad_v2.py: every flag of both with its
default, the shared training flags, and new: --version_2_with_negative,
--threshold_predict_file, --null_score_diff_threshold, --eval_timeout_secs, --seed. See README.md,
"SQuAD v1.1 and v2.0".

    python run_squad.py --albert_config_file=albert_config.json --spm_model_file=30k-clean.model \
        --init_checkpoint=model.ckpt-best --train_file=train-v1.1.json \
        --predict_file=dev-v1.1.json --do_train --do_predict --output_dir=out
"""

import os

import keras
import tensorflow as tf
from absl import app, flags, logging

from albert_tf import cli
from albert_tf import checkpoints
from albert_tf.squad import run as squad_run
from albert_tf.training import flags as training_flags


def define_flags(flag_values):
    """Defines the flags on `flag_values` (tests pass their own FlagValues)."""
    def define(kind, *args, **kwargs):
        getattr(flags, f"DEFINE_{kind}")(*args, flag_values=flag_values, **kwargs)

    define("string", "albert_config_file", None, "The config json file corresponding to the "
           "pre-trained ALBERT model. This specifies the model architecture.")
    define("string", "vocab_file", None, "Unused: SQuAD needs a SentencePiece model "
           "(--spm_model_file), as in the original.")
    define("string", "spm_model_file", None, "The model file for sentence piece tokenization.")
    define("string", "train_file", None, "SQuAD json for training. E.g., train-v1.1.json")
    define("string", "predict_file", None, "SQuAD json for predictions. E.g., dev-v1.1.json "
           "or test-v1.1.json")
    define("string", "train_feature_file", None, "Optional training feature cache (TFRecord); "
           "the cache key is added to the name. Default: under --output_dir.")
    define("string", "predict_feature_file", None, "Optional predict feature cache "
           "(TFRecord); the cache key is added to the name. Default: under --output_dir.")
    define("string", "predict_feature_left_file", None, "Optional JSON side file of the "
           "predict features (the original's pickle); default: beside the predict TFRecord.")
    define("string", "albert_hub_module_handle", None, "Not supported: TF-Hub ALBERT modules "
           "are TF1 hub.Module format; convert to a checkpoint and use --init_checkpoint.")
    define("bool", "do_lower_case", True, "Whether to lower case the input text. Should be "
           "True for uncased models and False for cased models.")
    define("integer", "max_seq_length", 384, "The maximum total input sequence length after "
           "WordPiece tokenization. Sequences longer than this will be truncated, and "
           "sequences shorter than this will be padded.", lower_bound=3)
    define("integer", "doc_stride", 128, "When splitting up a long document into chunks, how "
           "much stride to take between chunks.", lower_bound=1)
    define("integer", "max_query_length", 64, "The maximum number of tokens for the question. "
           "Questions longer than this will be truncated to this length.", lower_bound=1)
    define("bool", "do_predict", False, "Whether to run eval on the dev set (every "
           "checkpoint).")
    define("integer", "predict_batch_size", 8, "Total batch size for predictions.", lower_bound=1)
    define("float", "num_train_epochs", 3.0, "Total number of training epochs to perform.", lower_bound=0)
    define("float", "warmup_proportion", 0.1, "Proportion of training to perform linear "
           "learning rate warmup for. E.g., 0.1 = 10% of training.", lower_bound=0, upper_bound=1)
    define("integer", "n_best_size", 20, "The total number of n-best predictions to generate "
           "in the nbest_predictions.json output file.", lower_bound=1)
    define("integer", "max_answer_length", 30, "The maximum length of an answer that can be "
           "generated. This is needed because the start and end predictions are not "
           "conditioned on one another.", lower_bound=1)
    define("bool", "use_einsum", True, "Whether to use tf.einsum or tf.reshape+tf.matmul for "
           "dense layers. Must be set to False for TFLite compatibility (the TFLite file is "
           "always written from a reshape+matmul copy).")
    define("string", "export_dir", None, "The directory where the exported SavedModel "
           "(<export_dir>/saved_model/<version>) and albert_model.tflite will be stored.")
    define("bool", "export_raw_text", True, "Include the raw-text `answer` signature (in-graph "
           "tokenizer) in the export (new). It needs tensorflow_text wherever the model is "
           "served; with false the SavedModel holds no custom ops (stock TF Serving).")
    define("bool", "version_2_with_negative", False, "SQuAD v2.0 (unanswerable questions, "
           "the run_squad_v2.py model); default v1.1 (run_squad_v1.py).")
    define("integer", "start_n_top", 5, "v2: beam size for the answer start.", lower_bound=1)
    define("integer", "end_n_top", 5, "v2: beam size for the answer end.", lower_bound=1)
    define("float", "dropout_prob", 0.1, "v2: dropout probability in the answer_class head.",
           lower_bound=0, upper_bound=0.99)
    define("string", "threshold_predict_file", None, "v2: labelled SQuAD v2.0 json on which "
           "to choose the no-answer threshold (best F1). Default: the --predict_file itself, "
           "reported as tuned on the evaluated set.")
    define("float", "null_score_diff_threshold", None, "v2: a fixed no-answer threshold "
           "(answer \"\" when null_odds > threshold) instead of choosing one.")
    define("integer", "seed", None, "Seed of weight initialisation, dropout and shuffling (new; "
           "default: unseeded), as run_classifier.py's.")
    define("bool", "allow_random_init", False, "Allow --do_train without --init_checkpoint "
           "(fine-tuning a randomly initialised model; almost never what you want).")
    training_flags.define_training_flags(
        train_batch_size=32, learning_rate=5e-5, optimizer="adamw", save_checkpoints_steps=1000,
        iterations_per_loop=1000, do_train=False, flag_values=flag_values)
    training_flags.define_evaluation_flags(flag_values=flag_values)
    training_flags.define_length_bucket_flag(flag_values)
    for name in ("albert_config_file", "spm_model_file"):
        flags.mark_flag_as_required(name, flag_values=flag_values)


def run_options(flag_values):
    return cli.dataclass_from_flags(squad_run.SquadRun, flag_values)


def run(flag_values):
    """The whole script on parsed flags; returns the best checkpoint's results (or None)."""
    if flag_values.albert_hub_module_handle:
        raise app.UsageError("--albert_hub_module_handle is not supported (TF1 hub.Module); "
                             "use --init_checkpoint with a converted checkpoint")
    if not (flag_values.do_train or flag_values.do_predict or flag_values.export_dir):
        raise app.UsageError("At least one of `do_train`, `do_predict` or `export_dir` must "
                             "be specified.")
    if flag_values.seed is not None:
        keras.utils.set_random_seed(flag_values.seed)
    options = run_options(flag_values)
    results = None
    if options.do_train or options.do_predict:
        results = squad_run.run(options, training_flags.strategy_from_flags(flag_values),
                             training_flags.training_config_from_flags(
                                 flag_values, num_train_steps=1, num_warmup_steps=0))
    if flag_values.export_dir:
        from albert_tf.export import squad as squad_export
        threshold = options.null_score_diff_threshold
        if threshold is None and results:
            threshold = results.get("null_score_diff_threshold")
        paths = squad_export.export_from_checkpoint(
            options, _export_checkpoint(options), flag_values.export_dir, threshold,
            include_text=flag_values.export_raw_text)
        logging.info("Exported %s", paths)
    return results


def _export_checkpoint(options):
    """model.ckpt-best, else the latest checkpoint in --output_dir, else --init_checkpoint."""
    best = os.path.join(options.output_dir, checkpoints.BEST_CHECKPOINT_NAME)
    for candidate in (best, checkpoints.latest_checkpoint(options.output_dir),
                      options.init_checkpoint):
        if candidate and tf.io.gfile.exists(candidate + ".index"):
            return candidate
    raise app.UsageError(f"--export_dir: no checkpoint in {options.output_dir} and no "
                         "--init_checkpoint")


def entry():
    """Console entry point (`pip install` puts it on PATH as `run_squad`)."""
    cli.run_script(define_flags, run)


if __name__ == "__main__":
    entry()
