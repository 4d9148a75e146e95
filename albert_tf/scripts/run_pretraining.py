r"""Pretrain ALBERT (masked LM + sentence order) on create_pretraining_data.py records.

The original run_pretraining.py's flags and defaults, on tf.distribute instead of
TPUEstimator. New flags: --eval_input_file, --precision, --enable_xla,
--gradient_accumulation_steps, --distribution_strategy, --eval_timeout_secs,
--sentence_order_loss_weight, --seed. See README.md, "Pretraining".

    python run_pretraining.py --albert_config_file=albert_config.json \
        --input_file='data/pretrain-*.tfrecord' --output_dir=out \
        --train_batch_size=4096 --num_train_steps=125000 --num_warmup_steps=3125
"""

from absl import app, flags, logging
import keras

from albert_tf import cli
from albert_tf.files import output_lock, tfrecord_check
from albert_tf.config import AlbertConfig
from albert_tf.pretraining import file_patterns, outputs, task as pretraining_task
from albert_tf.training import evaluation, flags as training_flags, loop


def define_flags(flag_values):
    """Every flag of the script, on `flag_values` (tests parse their own)."""
    define = cli.Definer(flag_values)
    define.string("albert_config_file", None, "The config json file corresponding to the "
                  "pre-trained ALBERT model. This specifies the model architecture.")
    define.string("input_file", None, "Input TF example files (can be a glob or comma "
                  "separated).")
    define.string("eval_input_file", None, "Held-out TF example files for --do_eval (glob or "
                  "comma separated). Default: --input_file, as the original.")
    define.integer("max_seq_length", 512, "The maximum total input sequence length after "
                   "WordPiece tokenization. Must match the data.", lower_bound=5)
    define.integer("max_predictions_per_seq", 20, "Maximum number of masked LM predictions per "
                   "sequence. Must match the data.", lower_bound=1)
    define.integer("num_train_steps", 125000, "Number of training steps.", lower_bound=0)
    define.integer("num_warmup_steps", 3125, "Number of warmup steps.", lower_bound=0)
    define.integer("max_eval_steps", 100, "Maximum number of eval steps.", lower_bound=1)
    define.float("masked_lm_budget", 0, "Online masking budget (never implemented in the "
                 "original; any value > 0 is refused).", lower_bound=0)
    define.float("sentence_order_loss_weight", 1.0, "Weight of the sentence-order loss in the "
                 "total loss (new; 1 as the original, 0 trains the masked LM alone).",
                 lower_bound=0)
    define.integer("seed", None, "Seed of weight initialisation, dropout and the order of the "
                   "training records (new; default: unseeded).")
    training_flags.define_training_flags(
        train_batch_size=4096, eval_batch_size=64, learning_rate=0.00176, optimizer="lamb",
        save_checkpoints_steps=5000, keep_checkpoint_max=5, iterations_per_loop=1000,
        do_train=True, do_eval=False, flag_values=flag_values)
    training_flags.define_evaluation_flags(flag_values=flag_values)
    flags.mark_flag_as_required("albert_config_file", flag_values=flag_values)
    flags.mark_flag_as_required("input_file", flag_values=flag_values)


def run(flag_values):
    """The whole script on parsed flags."""
    if flag_values.masked_lm_budget > 0:
        raise app.UsageError(
            "--masked_lm_budget > 0 asks for online masking, which the original release never "
            "implemented (its run crashes); mask offline with create_pretraining_data.py and "
            "leave --masked_lm_budget=0")
    if not flag_values.do_train and not flag_values.do_eval:
        raise app.UsageError("At least one of --do_train or --do_eval must be True.")
    albert_config = AlbertConfig.from_json_file(flag_values.albert_config_file)
    input_files = file_patterns.expand(flag_values.input_file, "--input_file",
                                       exclude_suffixes=(outputs.SUMMARY_SUFFIX,))
    eval_files = (file_patterns.expand(flag_values.eval_input_file, "--eval_input_file",
                                       exclude_suffixes=(outputs.SUMMARY_SUFFIX,))
                  if flag_values.eval_input_file else input_files)
    train_records = tfrecord_check.check_files(input_files, "--input_file")
    eval_records = (tfrecord_check.check_files(eval_files, "--eval_input_file")
                    if flag_values.eval_input_file else train_records)
    if flag_values.do_eval:
        logging.info("Evaluating on %d record(s) in %d file(s)", sum(eval_records.values()),
                     len(eval_files))
    if flag_values.do_train:
        logging.info("Training on %d record(s) in %d file(s)", sum(train_records.values()),
                     len(input_files))
        output_lock.check_writable(flag_values.output_dir, "--output_dir")
        albert_config.write_beside(flag_values.output_dir)
    if flag_values.seed is not None:
        keras.utils.set_random_seed(flag_values.seed)
    strategy = training_flags.strategy_from_flags(flag_values)
    task = pretraining_task.PretrainingTask(
        albert_config, input_files, flag_values.max_seq_length,
        flag_values.max_predictions_per_seq, eval_input_files=eval_files,
        seed=flag_values.seed, sentence_order_loss_weight=flag_values.sentence_order_loss_weight)
    config = training_flags.training_config_from_flags(
        flag_values, num_train_steps=flag_values.num_train_steps,
        num_warmup_steps=flag_values.num_warmup_steps)
    trainer = loop.Trainer(task, strategy, config)

    def evaluate(checkpoint_path):
        """The original's eval: the loop's streaming metrics over --max_eval_steps batches."""
        trainer.checkpoints.restore_model(checkpoint_path)
        results = trainer.evaluate(flag_values.eval_batch_size,
                                   max_steps=flag_values.max_eval_steps)
        trainer.write_eval_summaries(results)
        return results

    evaluation.train_and_evaluate(
        trainer, evaluate, flag_values.do_train, flag_values.do_eval, config.num_train_steps,
        flag_values.eval_timeout_secs, only_latest=True)


def entry():
    """Console entry point (`pip install` puts it on PATH as `run_pretraining`)."""
    cli.run_script(define_flags, run)


if __name__ == "__main__":
    entry()
