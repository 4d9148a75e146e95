"""Fine-tune and evaluate ALBERT on SQuAD v1.1, or v2.0 with --version_2_with_negative.

One script for the original run_squad_v1.py and run_squad_v2.py: every flag of both with its
default; the fine-tuning flags are those every script shares (`training.flags`: --seed,
--length_buckets, --albert_hub_module_handle with a local module, --allow_random_init,
--eval_timeout_secs, precision and distribution), and new: --version_2_with_negative,
--threshold_predict_file, --null_score_diff_threshold. It runs the shared fine-tuning flow
with `squad.run.SquadJob`. See docs/squad.md.

    python run_squad.py --albert_config_file=albert_config.json --spm_model_file=30k-clean.model \\
        --init_checkpoint=model.ckpt-best --train_file=train-v1.1.json \\
        --predict_file=dev-v1.1.json --do_train --do_predict --output_dir=out
"""

from absl import logging

from albert_tf import cli
from albert_tf.export import squad as squad_export
from albert_tf.squad import run as squad_run
from albert_tf.training import fine_tuning
from albert_tf.training import flags as training_flags


def define_flags(flag_values):
    """Defines the flags on `flag_values` (tests pass their own FlagValues)."""
    training_flags.define_fine_tuning_flags(
        do_predict_help="Whether to run eval on the dev set (every checkpoint).",
        max_seq_length=384, predict_batch_size=8, do_train=False, do_eval=None,
        vocab_file_help="Unused: SQuAD needs a SentencePiece model (--spm_model_file), as in "
        "the original.", required=("albert_config_file", "spm_model_file"),
        train_batch_size=32, learning_rate=5e-5, optimizer="adamw", save_checkpoints_steps=1000,
        iterations_per_loop=1000, flag_values=flag_values)
    define = cli.Definer(flag_values)
    define.string("train_file", None, "SQuAD json for training. E.g., train-v1.1.json")
    define.string("predict_file", None, "SQuAD json for predictions. E.g., dev-v1.1.json "
                  "or test-v1.1.json")
    define.string("train_feature_file", None, "Optional training feature cache (TFRecord); "
                  "the cache key is added to the name. Default: under --output_dir.")
    define.string("predict_feature_file", None, "Optional predict feature cache "
                  "(TFRecord); the cache key is added to the name. Default: under --output_dir.")
    define.string("predict_feature_left_file", None, "Optional JSON side file of the "
                  "predict features (the original's pickle); default: beside the predict "
                  "TFRecord.")
    define.integer("doc_stride", 128, "When splitting up a long document into chunks, how "
                   "much stride to take between chunks.", lower_bound=1)
    define.integer("max_query_length", 64, "The maximum number of tokens for the question. "
                   "Questions longer than this will be truncated to this length.", lower_bound=1)
    define.float("num_train_epochs", 3.0, "Total number of training epochs to perform.",
                 lower_bound=0)
    define.float("warmup_proportion", 0.1, "Proportion of training to perform linear "
                 "learning rate warmup for. E.g., 0.1 = 10% of training.", lower_bound=0,
                 upper_bound=1)
    define.integer("n_best_size", 20, "The total number of n-best predictions to generate "
                   "in the nbest_predictions.json output file.", lower_bound=1)
    define.integer("max_answer_length", 30, "The maximum length of an answer that can be "
                   "generated. This is needed because the start and end predictions are not "
                   "conditioned on one another.", lower_bound=1)
    define.bool("use_einsum", True, "Accepted as the original's flag; no effect: dense layers "
                "are always tf.reshape+tf.matmul (the same variables and results as tf.einsum, "
                "and TFLite-compatible).")
    training_flags.define_export_flags(
        precisions=squad_export.EXPORT_PRECISIONS, tflite_signature="serving_default",
        text_signature="answer", export_dir_help="The directory where the exported SavedModel "
        "(<export_dir>/saved_model/<version>) and albert_model.tflite will be stored.",
        flag_values=flag_values)
    define.bool("version_2_with_negative", False, "SQuAD v2.0 (unanswerable questions, "
                "the run_squad_v2.py model); default v1.1 (run_squad_v1.py).")
    define.integer("start_n_top", 5, "v2: beam size for the answer start.", lower_bound=1)
    define.integer("end_n_top", 5, "v2: beam size for the answer end.", lower_bound=1)
    define.float("dropout_prob", 0.1, "v2: dropout probability in the answer_class head.",
                 lower_bound=0, upper_bound=0.99)
    define.string("threshold_predict_file", None, "v2: labelled SQuAD v2.0 json on which "
                  "to choose the no-answer threshold (best F1). Default: the --predict_file "
                  "itself, reported as tuned on the evaluated set.")
    define.float("null_score_diff_threshold", None, "v2: a fixed no-answer threshold "
                 "(answer \"\" when null_odds > threshold) instead of choosing one.")


def run_options(flag_values):
    return cli.dataclass_from_flags(squad_run.SquadRun, flag_values)


def run(flag_values):
    """The whole script on parsed flags; returns the best checkpoint's results (or None)."""
    options = run_options(flag_values)
    start = training_flags.start_fine_tuning(flag_values, ("do_train", "do_predict", "export_dir"),
                                             squad_run.keep_padding(options))
    init_checkpoint = training_flags.init_checkpoint_from_flags(flag_values)
    job = squad_run.SquadJob(
        options, flag_values.output_dir, start.albert_config, flag_values.max_seq_length,
        flag_values.spm_model_file, flag_values.do_lower_case, start.batching,
        config_source=flag_values.albert_config_file)
    results = None
    if flag_values.do_train or flag_values.do_predict:
        flow = job.flow_options(
            flag_values.output_dir, flag_values.do_train, flag_values.do_predict,
            flag_values.predict_batch_size, init_checkpoint=init_checkpoint,
            allow_random_init=flag_values.allow_random_init,
            eval_timeout_secs=flag_values.eval_timeout_secs)
        results = fine_tuning.train_evaluate_predict(
            job, flow, training_flags.training_config_from_flags(
                flag_values, num_train_steps=1, num_warmup_steps=0,
                init_checkpoint=init_checkpoint), start.strategy).test_results
    if flag_values.export_dir:
        threshold = options.null_score_diff_threshold
        if threshold is None and results:
            threshold = results.get("null_score_diff_threshold")
        paths = squad_export.export_from_checkpoint(
            job, job.best_checkpoint(fallback=init_checkpoint), flag_values.export_dir,
            threshold, include_text=flag_values.export_raw_text,
            export_precision=flag_values.export_precision)
        logging.info("Exported %s", paths)
    return results


def entry():
    """Console entry point (`pip install` puts it on PATH as `run_squad`)."""
    cli.run_script(define_flags, run)


if __name__ == "__main__":
    entry()
