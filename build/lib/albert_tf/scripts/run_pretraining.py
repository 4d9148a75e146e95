"""Pretrain ALBERT (masked LM + sentence order) on create_pretraining_data.py records.

The original run_pretraining.py's flags and defaults, on tf.distribute instead of
TPUEstimator. New flags: --eval_input_file, --precision, --enable_xla,
--gradient_accumulation_steps, --distribution_strategy, --eval_timeout_secs. See README.md,
"Pretraining".

    python run_pretraining.py --albert_config_file=albert_config.json \
        --input_file='data/pretrain-*.tfrecord' --output_dir=out \
        --train_batch_size=4096 --num_train_steps=125000 --num_warmup_steps=3125
"""

from absl import app, flags, logging

from albert_tf import cli, output_lock, tfrecord_check
from albert_tf.config import AlbertConfig
from albert_tf.pretraining import file_patterns, outputs, task as pretraining_task
from albert_tf.training import driver, flags as training_flags

FLAGS = flags.FLAGS

flags.DEFINE_string("albert_config_file", None, "The config json file corresponding to the "
                    "pre-trained ALBERT model. This specifies the model architecture.")
flags.DEFINE_string("input_file", None, "Input TF example files (can be a glob or comma "
                    "separated).")
flags.DEFINE_string("eval_input_file", None, "Held-out TF example files for --do_eval (glob or "
                    "comma separated). Default: --input_file, as the original.")
flags.DEFINE_integer("max_seq_length", 512, "The maximum total input sequence length after "
                     "WordPiece tokenization. Must match the data.", lower_bound=5)
flags.DEFINE_integer("max_predictions_per_seq", 20, "Maximum number of masked LM predictions per "
                     "sequence. Must match the data.", lower_bound=1)
flags.DEFINE_integer("num_train_steps", 125000, "Number of training steps.", lower_bound=0)
flags.DEFINE_integer("num_warmup_steps", 3125, "Number of warmup steps.", lower_bound=0)
flags.DEFINE_integer("max_eval_steps", 100, "Maximum number of eval steps.", lower_bound=1)
flags.DEFINE_float("masked_lm_budget", 0, "Online masking budget (never implemented in the "
                   "original; any value > 0 is refused).", lower_bound=0)
training_flags.define_training_flags(
    train_batch_size=4096, eval_batch_size=64, learning_rate=0.00176, optimizer="lamb",
    save_checkpoints_steps=5000, keep_checkpoint_max=5, iterations_per_loop=1000,
    do_train=True, do_eval=False)
training_flags.define_evaluation_flags()
flags.mark_flag_as_required("albert_config_file")
flags.mark_flag_as_required("input_file")


def main(_):
    logging.set_verbosity(logging.INFO)
    if FLAGS.masked_lm_budget > 0:
        raise app.UsageError(
            "--masked_lm_budget > 0 asks for online masking, which the original release never "
            "implemented (its run crashes); mask offline with create_pretraining_data.py and "
            "leave --masked_lm_budget=0")
    if not FLAGS.do_train and not FLAGS.do_eval:
        raise app.UsageError("At least one of --do_train or --do_eval must be True.")
    albert_config = AlbertConfig.from_json_file(FLAGS.albert_config_file)
    input_files = file_patterns.expand(FLAGS.input_file, "--input_file",
                                       exclude_suffixes=(outputs.SUMMARY_SUFFIX,))
    eval_files = (file_patterns.expand(FLAGS.eval_input_file, "--eval_input_file",
                                       exclude_suffixes=(outputs.SUMMARY_SUFFIX,))
                  if FLAGS.eval_input_file else input_files)
    train_records = tfrecord_check.check_files(input_files, "--input_file")
    eval_records = (tfrecord_check.check_files(eval_files, "--eval_input_file")
                    if FLAGS.eval_input_file else train_records)
    logging.info("Training on %d record(s) in %d file(s), evaluating on %d in %d",
                 sum(train_records.values()), len(input_files), sum(eval_records.values()),
                 len(eval_files))
    if FLAGS.do_train:
        output_lock.check_writable(FLAGS.output_dir, "--output_dir")
        albert_config.write_beside(FLAGS.output_dir)
    strategy = training_flags.strategy_from_flags(FLAGS)
    task = pretraining_task.PretrainingTask(
        albert_config, input_files, FLAGS.max_seq_length, FLAGS.max_predictions_per_seq,
        eval_input_files=eval_files)
    config = training_flags.training_config_from_flags(
        FLAGS, num_train_steps=FLAGS.num_train_steps, num_warmup_steps=FLAGS.num_warmup_steps)
    driver.train_and_evaluate(
        task, strategy, config, do_train=FLAGS.do_train, do_eval=FLAGS.do_eval,
        eval_batch_size=FLAGS.eval_batch_size, max_eval_steps=FLAGS.max_eval_steps,
        only_latest=True, eval_timeout_secs=FLAGS.eval_timeout_secs)


def entry():
    """Console entry point (`pip install` puts it on PATH as `run_pretraining`)."""
    cli.run(main)


if __name__ == "__main__":
    entry()
