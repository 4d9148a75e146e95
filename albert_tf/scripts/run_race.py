r"""Fine-tune ALBERT on RACE: train, evaluate every checkpoint, test, export.

The original run_race.py's flags and defaults on tf.distribute instead of
TPUEstimator, plus the shared training flags (--precision, --enable_xla,
--gradient_accumulation_steps, --distribution_strategy, --keep_checkpoint_max,
--eval_timeout_secs), --export_dir, --seed and --allow_random_init. See docs/race.md.

    python run_race.py --data_dir=data_root --output_dir=out/race \
        --albert_config_file=albert_base/albert_config.json \
        --spm_model_file=albert_base/30k-clean.model --init_checkpoint=albert_base \
        --do_train --do_eval --do_predict --export_dir=out/race/export \
        --max_seq_length=512 --max_qa_length=128 --train_step=12000 --warmup_step=1000 \
        --learning_rate=1e-5 --train_batch_size=32 --save_checkpoints_steps=100
"""


from absl import app, flags, logging

from albert_tf import cli
from albert_tf.export import race as race_export
from albert_tf.race import reader
from albert_tf.race import run as race_run
from albert_tf.training import flags as training_flags


def define_flags(flag_values):
    """Every flag of the script, on `flag_values` (tests parse their own)."""
    define = cli.Definer(flag_values)
    training_flags.define_fine_tuning_flags(
        data_dir_help="The input data dir: holds RACE/{train,dev,test}/{middle,high}/, each "
        "with all.txt (one JSON article per line) or one JSON article per *.txt file (the "
        "official download).",
        do_predict_help="Whether to evaluate model.ckpt-best on the test split "
        "(predict_results.txt, test_predictions.tsv).",
        max_seq_length=512, train_step=12000, warmup_step=1000, predict_batch_size=8,
        eval_batch_size=8, do_train=True, do_eval=True, train_batch_size=32,
        learning_rate=1e-5, optimizer="adamw", save_checkpoints_steps=100,
        keep_checkpoint_max=5, iterations_per_loop=1000, flag_values=flag_values)
    flags.DEFINE_alias("num_keep_checkpoint", "keep_checkpoint_max", flag_values=flag_values)
    define.string("task_name", "race", "The name of the task to train (only race).")
    define.string("train_file", None, "Training feature cache (TFRecord), created if missing. "
                  "The actual file is <stem>.<key>.tf_record beside it, the key encoding the "
                  "split, levels, lengths, casing and vocabulary (default: --output_dir).")
    define.string("eval_file", None, "Dev-split feature cache, named as --train_file.")
    define.string("predict_file", None, "Test-split feature cache (--do_predict), named as "
                  "--train_file. (Unused in the original.)")
    define.float("dropout_prob", 0.1, "Dropout probability on the pooled output before the "
                 "multiple-choice head.", lower_bound=0, upper_bound=0.99)
    define.integer("max_qa_length", 128, "The maximum number of tokens kept of the question "
                   "+ option (the LAST ones).", lower_bound=1)
    define.bool("high_only", False, "Whether to only run the model on the high school set.")
    define.bool("middle_only", False, "Whether to only run the model on the middle school "
                "set.")
    training_flags.define_export_flags(
        precisions=race_export.EXPORT_PRECISIONS, tflite_signature="serving_default",
        text_signature="text", export_dir_help="Export model.ckpt-best as a SavedModel to "
        "<export_dir>/<version>/ (TensorFlow Serving layout).", flag_values=flag_values)


def run(flag_values):
    """The whole script on parsed flags; returns the best dev result summary (or None)."""
    if flag_values.task_name.lower() != "race":
        raise app.UsageError(f"--task_name={flag_values.task_name}: run_race.py only runs race")
    start = training_flags.start_fine_tuning(
        flag_values, ("do_train", "do_eval", "do_predict", "export_dir"))
    levels = reader.levels_from_flags(flag_values.high_only, flag_values.middle_only)
    job = race_run.RaceJob(
        flag_values.data_dir, flag_values.output_dir, start.albert_config,
        flag_values.max_seq_length, flag_values.max_qa_length, levels,
        spm_model_file=flag_values.spm_model_file, vocab_file=flag_values.vocab_file,
        do_lower_case=flag_values.do_lower_case, dropout_prob=flag_values.dropout_prob,
        train_file=flag_values.train_file, eval_file=flag_values.eval_file,
        predict_file=flag_values.predict_file, batching=start.batching)
    summary = training_flags.run_flow(job, flag_values, start.strategy).summary
    if flag_values.export_dir:
        checkpoint = job.best_checkpoint()
        path = race_export.export_from_checkpoint(job, checkpoint, flag_values.export_dir,
                                                  flag_values.export_raw_text,
                                                  flag_values.export_precision)
        logging.info("Exported %s to %s", checkpoint, path)
    return summary


def entry():
    """Console entry point (`pip install` puts it on PATH as `run_race`)."""
    cli.run_script(define_flags, run)


if __name__ == "__main__":
    entry()
