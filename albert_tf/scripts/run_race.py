"""Fine-tune ALBERT on RACE: train, evaluate every checkpoint, test, export.

The original run_race.py's flags and defaults on tf.distribute instead of
TPUEstimator, plus the shared training flags (--precision, --enable_xla,
--gradient_accumulation_steps, --distribution_strategy, --keep_checkpoint_max,
--eval_timeout_secs), --export_dir, --seed and --allow_random_init. See README.md, "RACE".

    python run_race.py --data_dir=data_root --output_dir=out/race \
        --albert_config_file=albert_base/albert_config.json \
        --spm_model_file=albert_base/30k-clean.model --init_checkpoint=albert_base \
        --do_train --do_eval --do_predict --export_dir=out/race/export \
        --max_seq_length=512 --max_qa_length=128 --train_step=12000 --warmup_step=1000 \
        --learning_rate=1e-5 --train_batch_size=32 --save_checkpoints_steps=100
"""


from absl import app, flags, logging
import keras

from albert_tf import cli, output_lock
from albert_tf.config import AlbertConfig
from albert_tf.export import race as race_export
from albert_tf.race import reader
from albert_tf.race import run as race_run
from albert_tf.training import flags as training_flags

FLAGS = flags.FLAGS

flags.DEFINE_string("data_dir", None, "The input data dir: holds RACE/{train,dev,test}/"
                    "{middle,high}/, each with all.txt (one JSON article per line) or one JSON "
                    "article per *.txt file (the official download).")
flags.DEFINE_string("albert_config_file", None, "The config json file corresponding to the "
                    "pre-trained ALBERT model. This specifies the model architecture.")
flags.DEFINE_string("task_name", "race", "The name of the task to train (only race).")
flags.DEFINE_string("vocab_file", None, "The vocabulary file that the ALBERT model was trained "
                    "on (WordPiece; used when --spm_model_file is not given).")
flags.DEFINE_string("train_file", None, "Training feature cache (TFRecord), created if missing. "
                    "The actual file is <stem>.<key>.tf_record beside it, the key encoding the "
                    "split, levels, lengths, casing and vocabulary (default: --output_dir).")
flags.DEFINE_string("eval_file", None, "Dev-split feature cache, named as --train_file.")
flags.DEFINE_string("predict_file", None, "Test-split feature cache (--do_predict), named as "
                    "--train_file. (Unused in the original.)")
flags.DEFINE_string("spm_model_file", None, "The model file for sentence piece tokenization.")
flags.DEFINE_string("albert_hub_module_handle", None, "A LOCAL directory holding an unpacked "
                    "TF1 Hub ALBERT module; its variables are used as --init_checkpoint. "
                    "(Hub URLs cannot be fetched; the architecture comes from "
                    "--albert_config_file.)")
flags.DEFINE_bool("do_lower_case", True, "Whether to lower case the input text. Should be "
                  "True for uncased models and False for cased models.")
flags.DEFINE_float("dropout_prob", 0.1, "Dropout probability on the pooled output before the "
                   "multiple-choice head.", lower_bound=0, upper_bound=0.99)
flags.DEFINE_integer("max_seq_length", 512, "The maximum total input sequence length after "
                     "tokenization. Sequences longer than this will be truncated, and "
                     "sequences shorter than this will be padded.", lower_bound=3)
flags.DEFINE_integer("max_qa_length", 128, "The maximum number of tokens kept of the question "
                     "+ option (the LAST ones).", lower_bound=1)
flags.DEFINE_bool("high_only", False, "Whether to only run the model on the high school set.")
flags.DEFINE_bool("middle_only", False, "Whether to only run the model on the middle school "
                  "set.")
flags.DEFINE_bool("do_predict", False, "Whether to evaluate model.ckpt-best on the test split "
                  "(predict_results.txt, test_predictions.tsv).")
flags.DEFINE_integer("predict_batch_size", 8, "Total batch size for predict.", lower_bound=1)
flags.DEFINE_integer("train_step", 12000, "Total number of training steps to perform.", lower_bound=0)
flags.DEFINE_integer("warmup_step", 1000, "Number of steps to perform linear learning rate "
                     "warmup for.", lower_bound=0)
flags.DEFINE_string("export_dir", None, "Export model.ckpt-best as a SavedModel to "
                    "<export_dir>/<version>/ (TensorFlow Serving layout).")
flags.DEFINE_bool("export_raw_text", True, "Include the raw-text `text` signature (in-graph "
                  "tokenizer) in the export. It needs tensorflow_text wherever the model is "
                  "served; with false the SavedModel holds no custom ops (stock TF Serving).")
flags.DEFINE_bool("allow_random_init", False, "Allow --do_train without --init_checkpoint "
                  "(fine-tuning a randomly initialised model; normally a mistake).")
training_flags.define_training_flags(
    train_batch_size=32, eval_batch_size=8, learning_rate=1e-5, optimizer="adamw",
    save_checkpoints_steps=100, keep_checkpoint_max=5, iterations_per_loop=1000,
    do_train=True, do_eval=True)
training_flags.define_evaluation_flags()
training_flags.define_length_bucket_flag()
flags.DEFINE_alias("num_keep_checkpoint", "keep_checkpoint_max")
flags.DEFINE_integer("seed", None, "Seed of weight initialisation, dropout and shuffling (new; "
                     "default: unseeded), as run_classifier.py's.")
for _required in ("data_dir", "albert_config_file"):
    flags.mark_flag_as_required(_required)


def main(_):
    logging.set_verbosity(logging.INFO)
    if FLAGS.task_name.lower() != "race":
        raise app.UsageError(f"--task_name={FLAGS.task_name}: run_race.py only runs race")
    if not (FLAGS.do_train or FLAGS.do_eval or FLAGS.do_predict or FLAGS.export_dir):
        raise app.UsageError("At least one of --do_train, --do_eval, --do_predict or "
                             "--export_dir must be given.")
    if FLAGS.seed is not None:
        keras.utils.set_random_seed(FLAGS.seed)
    albert_config = AlbertConfig.from_json_file(FLAGS.albert_config_file)
    levels = reader.levels_from_flags(FLAGS.high_only, FLAGS.middle_only)
    strategy = training_flags.strategy_from_flags(FLAGS)
    job = race_run.RaceJob(
        FLAGS.data_dir, FLAGS.output_dir, albert_config, FLAGS.max_seq_length,
        FLAGS.max_qa_length, levels, spm_model_file=FLAGS.spm_model_file,
        vocab_file=FLAGS.vocab_file, do_lower_case=FLAGS.do_lower_case,
        dropout_prob=FLAGS.dropout_prob, train_file=FLAGS.train_file,
        eval_file=FLAGS.eval_file, predict_file=FLAGS.predict_file,
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
            logging.info("Best eval_accuracy = %s at step %s", summary["best_value"],
                         summary["best_step"])
    if FLAGS.do_predict:
        for path in job.predict(trainer, FLAGS.predict_batch_size):
            logging.info("Wrote %s", path)
    if FLAGS.export_dir:
        checkpoint = race_run.resolve_best_checkpoint(FLAGS.output_dir)
        path = race_export.export_from_checkpoint(job, checkpoint, FLAGS.export_dir,
                                                  FLAGS.export_raw_text)
        logging.info("Exported %s to %s", checkpoint, path)


def entry():
    """Console entry point (`pip install` puts it on PATH as `run_race`)."""
    cli.run(main)


if __name__ == "__main__":
    entry()
