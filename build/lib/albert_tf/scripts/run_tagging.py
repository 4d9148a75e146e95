"""Fine-tune ALBERT to tag every word (part of speech, BIO names): train, evaluate every
checkpoint, predict the test file. New (the original had no tagging script); built only from the
shared fine-tuning flow, with run_classifier.py's flag names.

    python run_tagging.py --data_dir=data/brown_pos --output_dir=out/pos \
        --albert_config_file=albert_base/albert_config.json \
        --spm_model_file=albert_base/30k-clean.model --init_checkpoint=albert_base \
        --do_train --do_eval --do_predict --max_seq_length=128 --train_step=2000

--data_dir holds train.txt, dev.txt and test.txt: one `token tag` per line (the first and last
columns of CoNLL files), a blank line between sentences.
"""

from absl import app, flags, logging
import keras

from albert_tf import cli, output_lock
from albert_tf.config import AlbertConfig
from albert_tf.tagging import run as tagging_run
from albert_tf.training import fine_tuning
from albert_tf.training import flags as training_flags

FLAGS = flags.FLAGS


def define_flags(flag_values=FLAGS):
    """Every flag of the script, on `flag_values` (tests parse their own)."""
    def define(kind, *args, **kwargs):
        getattr(flags, f"DEFINE_{kind}")(*args, flag_values=flag_values, **kwargs)

    define("string", "data_dir", None, "Directory of train.txt, dev.txt and test.txt (`token tag` "
           "lines, a blank line between sentences).")
    define("string", "albert_config_file", None, "The config json file of the ALBERT model.")
    define("string", "spm_model_file", None, "The SentencePiece model of the ALBERT model.")
    define("string", "vocab_file", None, "A WordPiece vocabulary (when --spm_model_file is not "
           "given).")
    define("bool", "do_lower_case", True, "Lower-case the input (uncased models).")
    define("integer", "max_seq_length", 128, "Pieces per sentence, [CLS] and [SEP] included; "
           "words beyond are not tagged.", lower_bound=3)
    define("bool", "do_predict", False, "Tag test.txt with model.ckpt-best "
           "(test_predictions.txt, test_results.txt).")
    define("integer", "predict_batch_size", 32, "Batch size for predict.", lower_bound=1)
    define("integer", "train_step", 1000, "Total number of training steps.", lower_bound=0)
    define("integer", "warmup_step", 0, "Linear learning rate warmup steps.", lower_bound=0)
    define("integer", "seed", None, "Seed of initialisation, dropout and shuffling.")
    define("bool", "allow_random_init", False, "Allow --do_train without --init_checkpoint.")
    training_flags.define_training_flags(
        train_batch_size=32, eval_batch_size=32, learning_rate=5e-5, optimizer="adamw",
        save_checkpoints_steps=500, iterations_per_loop=100, do_train=False, do_eval=False,
        flag_values=flag_values)
    training_flags.define_evaluation_flags(flag_values=flag_values)
    training_flags.define_length_bucket_flag(flag_values)
    for name in ("data_dir", "albert_config_file"):
        flags.mark_flag_as_required(name, flag_values=flag_values)


def run(flag_values):
    """The whole script on parsed flags; returns the best dev result summary (or None)."""
    if not (flag_values.do_train or flag_values.do_eval or flag_values.do_predict):
        raise app.UsageError("At least one of --do_train, --do_eval or --do_predict must be given.")
    if flag_values.seed is not None:
        keras.utils.set_random_seed(flag_values.seed)
    albert_config = AlbertConfig.from_json_file(flag_values.albert_config_file)
    strategy = training_flags.strategy_from_flags(flag_values)
    job = tagging_run.TaggingJob(
        flag_values.data_dir, flag_values.output_dir, albert_config, flag_values.max_seq_length,
        spm_model_file=flag_values.spm_model_file, vocab_file=flag_values.vocab_file,
        do_lower_case=flag_values.do_lower_case,
        length_buckets=training_flags.length_buckets_from_flags(flag_values, strategy))
    fine_tuning.check_init_checkpoint(flag_values.init_checkpoint, flag_values.allow_random_init,
                                      flag_values.do_train, flag_values.output_dir)
    output_lock.check_writable(flag_values.output_dir, "--output_dir")
    if flag_values.do_train:
        albert_config.write_beside(flag_values.output_dir)
    config = training_flags.training_config_from_flags(
        flag_values, num_train_steps=flag_values.train_step,
        num_warmup_steps=flag_values.warmup_step)
    trainer = job.build_trainer(strategy, config, flag_values.do_train, flag_values.do_eval)
    summary = None
    if flag_values.do_train or flag_values.do_eval:
        summary = job.train_and_evaluate(trainer, flag_values.do_train, flag_values.do_eval,
                                         flag_values.eval_batch_size,
                                         flag_values.eval_timeout_secs)
        if summary:
            logging.info("Best %s = %s at step %s", trainer.task.eval_metric_name,
                         summary["best_value"], summary["best_step"])
    if flag_values.do_predict:
        for path in job.predict(trainer, flag_values.predict_batch_size):
            logging.info("Wrote %s", path)
    return summary


def main(_):
    logging.set_verbosity(logging.INFO)
    run(FLAGS)


def entry():
    """Console entry point (`pip install` puts it on PATH as `run_tagging`)."""
    define_flags()
    cli.run(main)


if __name__ == "__main__":
    entry()
