r"""Fine-tune ALBERT on a GLUE task: train, evaluate every checkpoint, predict, export.

The original run_classifier.py's flags and defaults on tf.distribute instead of
TPUEstimator, plus the shared training flags (--precision, --enable_xla,
--gradient_accumulation_steps, --distribution_strategy, --eval_timeout_secs), --seed and
--allow_random_init. See docs/glue.md.

    python run_classifier.py --task_name=mrpc --data_dir=glue_data --output_dir=out/MRPC \
        --albert_config_file=albert_base/albert_config.json \
        --spm_model_file=albert_base/30k-clean.model --init_checkpoint=albert_base \
        --do_train --do_eval --do_predict --export_dir=out/MRPC/export \
        --max_seq_length=512 --train_step=800 --warmup_step=200 --learning_rate=2e-5 \
        --save_checkpoints_steps=100 --train_batch_size=32
"""

import math

from absl import app, flags, logging

from albert_tf import cli
from albert_tf.export import classifier as classifier_export
from albert_tf.export import preprocessor as preprocessor_export
from albert_tf.glue import processors
from albert_tf.glue import run as glue_run
from albert_tf.training import flags as training_flags


def define_flags(flag_values):
    """Every flag of the script, on `flag_values` (tests parse their own)."""
    define = cli.Definer(flag_values)
    training_flags.define_fine_tuning_flags(
        data_dir_help="The input data dir. Should contain the .tsv files (or other data files) "
        "for the task: MNLI/, CoLA/, ... (diagnostic/ for ax).",
        do_predict_help="Whether to run the model in inference mode on the test set "
        "(test_results.tsv, submit_results.tsv from model.ckpt-best).",
        max_seq_length=512, train_step=1000, warmup_step=0, predict_batch_size=8,
        eval_batch_size=8, train_batch_size=32, learning_rate=5e-5, optimizer="adamw",
        save_checkpoints_steps=1000, keep_checkpoint_max=5, iterations_per_loop=1000,
        flag_values=flag_values)
    define.string("task_name", None, "The name of the task to train: "
                  + ", ".join(sorted(processors.PROCESSORS)) + ".")
    define.string("cached_dir", None, "Path to cached training and dev tfrecord files "
                  "(default: --output_dir). File names encode the task, split, "
                  "max_seq_length, casing and hashes of the vocabulary and data files.")
    training_flags.define_export_flags(
        precisions=classifier_export.EXPORT_PRECISIONS, tflite_signature="ids",
        text_signature="text", export_dir_help="The directory where the exported SavedModel "
        "will be stored (in a numeric version subdirectory, for TensorFlow Serving).",
        raw_text_note=", and --export_preprocessor_dir takes the tokenizer",
        flag_values=flag_values)
    define.string("export_preprocessor_dir", None, "Also write the raw-text tokenizer as a "
                  "SavedModel of its own here (new; text_a, text_b -> the model's ids inputs).")
    define.float("threshold_to_export", float("nan"), "The threshold value that should be "
                 "used with the exported classifier. When specified, the threshold will be "
                 "attached to the exported SavedModel, and served along with the "
                 "predictions.")
    flags.mark_flag_as_required("task_name", flag_values=flag_values)


def run(flag_values):
    """The whole script on parsed flags; returns the best dev result summary (or None)."""
    if flag_values.export_preprocessor_dir and not flag_values.spm_model_file:
        raise app.UsageError("--export_preprocessor_dir needs --spm_model_file (the in-graph "
                             "tokenizer is SentencePiece)")
    start = training_flags.start_fine_tuning(
        flag_values, ("do_train", "do_eval", "do_predict", "export_dir", "export_preprocessor_dir"))
    job = glue_run.ClassifierJob(
        flag_values.task_name, flag_values.data_dir, flag_values.output_dir, start.albert_config,
        flag_values.max_seq_length, spm_model_file=flag_values.spm_model_file,
        vocab_file=flag_values.vocab_file, do_lower_case=flag_values.do_lower_case,
        cached_dir=flag_values.cached_dir, batching=start.batching)
    summary = training_flags.run_flow(job, flag_values, start.strategy).summary
    if flag_values.export_dir:
        threshold = flag_values.threshold_to_export
        path = classifier_export.export_from_checkpoint(
            job, job.best_checkpoint(), flag_values.export_dir,
            threshold=None if math.isnan(threshold) else threshold,
            export_precision=flag_values.export_precision,
            include_text=flag_values.export_raw_text)
        logging.info("Exported %s", path)
    if flag_values.export_preprocessor_dir:
        path = preprocessor_export.write_preprocessor(
            flag_values.spm_model_file, flag_values.do_lower_case, flag_values.max_seq_length,
            flag_values.export_preprocessor_dir, job.batching.served())
        logging.info("Exported the text preprocessor %s", path)
    return summary


def entry():
    """Console entry point (`pip install` puts it on PATH as `run_classifier`)."""
    cli.run_script(define_flags, run)


if __name__ == "__main__":
    entry()
