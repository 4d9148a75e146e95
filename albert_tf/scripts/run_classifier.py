r"""Fine-tune ALBERT on a GLUE task or your own files: train, evaluate every checkpoint, predict,
export.

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

Your own CSV, TSV or JSON Lines files replace --task_name/--data_dir (albert_tf/glue/own_files.py):

    python run_classifier.py --train_file=train.csv --validation_file=dev.csv \
        --test_file=test.csv --text_column_names=premise,hypothesis --label_column_name=label \
        --output_dir=out/mine ... (the same model, training and export flags)
"""

import math

from absl import app, logging

from albert_tf import cli
from albert_tf.export import classifier as classifier_export
from albert_tf.export import preprocessor as preprocessor_export
from albert_tf.glue import own_files, processors
from albert_tf.glue import run as glue_run
from albert_tf.keras_tasks import presets
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
        required=("albert_config_file",), flag_values=flag_values)
    define.string("task_name", None, "The name of the task to train: "
                  + ", ".join(sorted(processors.PROCESSORS)) + "; with the file flags, a name "
                  "of your own (default: own_data).")
    define.string("train_file", None, "Your own training file instead of --task_name/"
                  "--data_dir (new): .csv (header row, quoted fields), .tsv (header row) or "
                  ".jsonl (one JSON object a line).")
    define.string("validation_file", None, "Your own dev file (--do_eval), as --train_file.")
    define.string("test_file", None, "Your own test file (--do_predict), as --train_file; its "
                  "label column may be absent.")
    define.list("text_column_names", ["text"], "With the file flags: the text column, or two "
                "for sentence pairs (premise,hypothesis).")
    define.string("label_column_name", "label", "With the file flags: the label column.")
    define.list("label_names", None, "With the file flags: every label, in the order of the "
                "model's outputs (default: the training file's labels, sorted).")
    define.bool("do_regression", False, "With the file flags: numeric labels, one output, "
                "squared-error loss, scored by Pearson and Spearman as STS-B.")
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


def run(flag_values):
    """The whole script on parsed flags; returns the best dev result summary (or None)."""
    if flag_values.export_preprocessor_dir and not flag_values.spm_model_file:
        raise app.UsageError("--export_preprocessor_dir needs --spm_model_file (the in-graph "
                             "tokenizer is SentencePiece)")
    task_name = task_from_flags(flag_values)
    start = training_flags.start_fine_tuning(
        flag_values, ("do_train", "do_eval", "do_predict", "export_dir", "export_preprocessor_dir"))
    job = glue_run.ClassifierJob(
        task_name, flag_values.data_dir, flag_values.output_dir, start.albert_config,
        flag_values.max_seq_length, spm_model_file=flag_values.spm_model_file,
        vocab_file=flag_values.vocab_file, do_lower_case=flag_values.do_lower_case,
        cached_dir=flag_values.cached_dir, batching=start.batching)
    summary = training_flags.run_flow(job, flag_values, start.strategy).summary
    if flag_values.do_train and flag_values.spm_model_file and not job.regression:
        presets.write_run_files(flag_values.output_dir, flag_values.spm_model_file, job.label_list,
                                flag_values.max_seq_length, flag_values.do_lower_case)
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


def task_from_flags(flag_values):
    """The task's name: --task_name of a GLUE task, or the user's files registered as a task
    (every row checked first, the labels written beside the checkpoints)."""
    files = (flag_values.train_file, flag_values.validation_file, flag_values.test_file)
    if not any(files):
        if not flag_values.task_name or not flag_values.data_dir:
            raise app.UsageError("Give --task_name and --data_dir (a GLUE task), or your own "
                                 "files with --train_file, --validation_file, --test_file")
        return flag_values.task_name
    if flag_values.data_dir:
        raise app.UsageError("--data_dir is for GLUE tasks; your own files are named by "
                             "--train_file, --validation_file and --test_file alone")
    if len(flag_values.text_column_names) not in (1, 2):
        raise app.UsageError(f"--text_column_names={','.join(flag_values.text_column_names)}: "
                             "expected one column, or two for sentence pairs")
    data = own_files.OwnData(
        flag_values.train_file, flag_values.validation_file, flag_values.test_file,
        tuple(flag_values.text_column_names), flag_values.label_column_name,
        tuple(flag_values.label_names) if flag_values.label_names else
        own_files.read_label_names(flag_values.output_dir),
        flag_values.do_regression)
    splits = [split for split, wanted in (("train", flag_values.do_train),
                                          ("dev", flag_values.do_eval),
                                          ("test", flag_values.do_predict)) if wanted]
    labels = own_files.check_files(data, splits)
    task_name = flag_values.task_name or "own_data"
    own_files.register(data, task_name, labels)
    if not data.regression:
        own_files.write_label_names(flag_values.output_dir, labels)
    return task_name


def entry():
    """Console entry point (`pip install` puts it on PATH as `run_classifier`)."""
    cli.run_script(define_flags, run)


if __name__ == "__main__":
    entry()
