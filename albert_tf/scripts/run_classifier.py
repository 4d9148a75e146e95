"""Fine-tune ALBERT on a GLUE task: train, evaluate every checkpoint, predict, export.

The original run_classifier.py's flags and defaults on tf.distribute instead of
TPUEstimator, plus the shared training flags (--precision, --enable_xla,
--gradient_accumulation_steps, --distribution_strategy, --eval_timeout_secs), --seed and
--allow_random_init. See README.md, "GLUE".

    python run_classifier.py --task_name=mrpc --data_dir=glue --output_dir=out/mrpc \
        --albert_config_file=albert_base/albert_config.json \
        --spm_model_file=albert_base/30k-clean.model --init_checkpoint=albert_base \
        --do_train --do_eval --do_predict --export_dir=out/mrpc/export \
        --max_seq_length=512 --train_step=800 --warmup_step=200 --learning_rate=2e-5 \
        --save_checkpoints_steps=100 --train_batch_size=32
"""

import math

from absl import app, flags, logging
import keras

from albert_tf import cli, output_lock
from albert_tf.config import AlbertConfig
from albert_tf.export import classifier as classifier_export
from albert_tf.export import preprocessor as preprocessor_export
from albert_tf.glue import processors
from albert_tf.glue import run as glue_run
from albert_tf.training import flags as training_flags

FLAGS = flags.FLAGS

flags.DEFINE_string("data_dir", None, "The input data dir. Should contain the .tsv files (or "
                    "other data files) for the task: MNLI/, CoLA/, ... (diagnostic/ for ax).")
flags.DEFINE_string("albert_config_file", None, "The config json file corresponding to the "
                    "pre-trained ALBERT model. This specifies the model architecture.")
flags.DEFINE_string("task_name", None, "The name of the task to train: "
                    + ", ".join(sorted(processors.PROCESSORS)) + ".")
flags.DEFINE_string("vocab_file", None, "The vocabulary file that the ALBERT model was trained "
                    "on (WordPiece; used when --spm_model_file is not given).")
flags.DEFINE_string("spm_model_file", None, "The model file for sentence piece tokenization.")
flags.DEFINE_string("cached_dir", None, "Path to cached training and dev tfrecord files "
                    "(default: --output_dir). File names encode the task, split, "
                    "max_seq_length, casing and hashes of the vocabulary and data files.")
flags.DEFINE_string("albert_hub_module_handle", None, "A LOCAL directory holding an unpacked "
                    "TF1 Hub ALBERT module; its variables are used as --init_checkpoint. "
                    "(Hub URLs cannot be fetched; the architecture comes from "
                    "--albert_config_file.)")
flags.DEFINE_bool("do_lower_case", True, "Whether to lower case the input text. Should be "
                  "True for uncased models and False for cased models.")
flags.DEFINE_integer("max_seq_length", 512, "The maximum total input sequence length after "
                     "tokenization. Sequences longer than this will be truncated, and "
                     "sequences shorter than this will be padded.", lower_bound=3)
flags.DEFINE_bool("do_predict", False, "Whether to run the model in inference mode on the test "
                  "set (test_results.tsv, submit_results.tsv from model.ckpt-best).")
flags.DEFINE_integer("predict_batch_size", 8, "Total batch size for predict.", lower_bound=1)
flags.DEFINE_integer("train_step", 1000, "Total number of training steps to perform.", lower_bound=0)
flags.DEFINE_integer("warmup_step", 0, "Number of steps to perform linear learning rate warmup "
                     "for.", lower_bound=0)
flags.DEFINE_string("export_dir", None, "The directory where the exported SavedModel will be "
                    "stored (in a numeric version subdirectory, for TensorFlow Serving).")
flags.DEFINE_bool("export_raw_text", True, "Include the in-graph tokenizer and the `text` "
                  "signature in the exported model (new). Those need tensorflow_text wherever "
                  "the model is served; with false the export holds no custom ops (stock TF "
                  "Serving, saved_model_cli) and --export_preprocessor_dir takes the tokenizer.")
flags.DEFINE_string("export_preprocessor_dir", None, "Also write the raw-text tokenizer as a "
                    "SavedModel of its own here (new; text_a, text_b -> the model's ids inputs).")
flags.DEFINE_float("threshold_to_export", float("nan"), "The threshold value that should be "
                   "used with the exported classifier. When specified, the threshold will be "
                   "attached to the exported SavedModel, and served along with the "
                   "predictions.")
flags.DEFINE_integer("seed", None, "Seed of weight initialisation, dropout and shuffling (new; default: "
                     "unseeded). Results still differ between seeds: the paper reports the "
                     "median of 5 runs.")
flags.DEFINE_bool("allow_random_init", False, "Allow --do_train without --init_checkpoint "
                  "(fine-tuning a randomly initialised model; normally a mistake).")
training_flags.define_training_flags(
    train_batch_size=32, eval_batch_size=8, learning_rate=5e-5, optimizer="adamw",
    save_checkpoints_steps=1000, keep_checkpoint_max=5, iterations_per_loop=1000,
    do_train=False, do_eval=False)
training_flags.define_evaluation_flags()
training_flags.define_length_bucket_flag()
for _required in ("data_dir", "task_name", "albert_config_file"):
    flags.mark_flag_as_required(_required)


def main(_):
    logging.set_verbosity(logging.INFO)
    if not (FLAGS.do_train or FLAGS.do_eval or FLAGS.do_predict or FLAGS.export_dir
            or FLAGS.export_preprocessor_dir):
        raise app.UsageError("At least one of --do_train, --do_eval, --do_predict or "
                             "--export_dir must be given.")
    if FLAGS.export_preprocessor_dir and not FLAGS.spm_model_file:
        raise app.UsageError("--export_preprocessor_dir needs --spm_model_file (the in-graph "
                             "tokenizer is SentencePiece)")
    if FLAGS.seed is not None:
        keras.utils.set_random_seed(FLAGS.seed)
    albert_config = AlbertConfig.from_json_file(FLAGS.albert_config_file)
    strategy = training_flags.strategy_from_flags(FLAGS)
    job = glue_run.ClassifierJob(
        FLAGS.task_name, FLAGS.data_dir, FLAGS.output_dir, albert_config,
        FLAGS.max_seq_length, spm_model_file=FLAGS.spm_model_file,
        vocab_file=FLAGS.vocab_file, do_lower_case=FLAGS.do_lower_case,
        cached_dir=FLAGS.cached_dir,
        length_buckets=training_flags.length_buckets_from_flags(FLAGS, strategy))
    init_checkpoint = training_flags.init_checkpoint_from_flags(FLAGS)
    job.check_init_checkpoint(init_checkpoint, FLAGS.allow_random_init, FLAGS.do_train)
    if FLAGS.do_train or FLAGS.do_eval:
        output_lock.check_writable(FLAGS.output_dir, "--output_dir")
    if FLAGS.do_train:
        albert_config.write_beside(FLAGS.output_dir)
    config = training_flags.training_config_from_flags(
        FLAGS, num_train_steps=FLAGS.train_step, num_warmup_steps=FLAGS.warmup_step,
        init_checkpoint=init_checkpoint)
    trainer = job.build_trainer(strategy, config, do_train=FLAGS.do_train, do_eval=FLAGS.do_eval)
    if FLAGS.do_train or FLAGS.do_eval:
        summary = job.train_and_evaluate(trainer, FLAGS.do_train, FLAGS.do_eval,
                                         FLAGS.eval_batch_size, FLAGS.eval_timeout_secs)
        if summary:
            logging.info("Best %s = %s at step %s", trainer.task.eval_metric_name,
                         summary["best_value"], summary["best_step"])
    if FLAGS.do_predict:
        for path in job.predict(trainer, FLAGS.predict_batch_size):
            logging.info("Wrote %s", path)
    if FLAGS.export_dir:
        threshold = None if math.isnan(FLAGS.threshold_to_export) else FLAGS.threshold_to_export
        path = classifier_export.export_from_checkpoint(
            job, glue_run.resolve_best_checkpoint(FLAGS.output_dir), FLAGS.export_dir,
            threshold=threshold, include_text=FLAGS.export_raw_text)
        logging.info("Exported %s", path)
    if FLAGS.export_preprocessor_dir:
        path = preprocessor_export.write_preprocessor(
            FLAGS.spm_model_file, FLAGS.do_lower_case, FLAGS.max_seq_length,
            FLAGS.export_preprocessor_dir)
        logging.info("Exported the text preprocessor %s", path)


def entry():
    """Console entry point (`pip install` puts it on PATH as `run_classifier`)."""
    cli.run(main)


if __name__ == "__main__":
    entry()
