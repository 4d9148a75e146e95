r"""Fine-tune ALBERT to tag every word (part of speech, BIO names): train, evaluate every
checkpoint, predict the test file. New (the original had no tagging script); built only from the
shared fine-tuning flow, with run_classifier.py's flag names.

    python run_tagging.py --data_dir=data/brown_pos --output_dir=out/pos \
        --albert_config_file=albert_base/albert_config.json \
        --spm_model_file=albert_base/30k-clean.model --init_checkpoint=albert_base \
        --do_train --do_eval --do_predict --max_seq_length=128 --train_step=2000

--data_dir holds train.txt, dev.txt and test.txt: one `token tag` per line (the first and last
columns of CoNLL files), a blank line between sentences; or train.jsonl, dev.jsonl and
test.jsonl: one `{"tokens": [...], "tags": [...]}` a line (--tokens_column_name,
--tags_column_name).
"""

from albert_tf import cli
from albert_tf.tagging import reader
from albert_tf.tagging import run as tagging_run
from albert_tf.training import flags as training_flags


def define_flags(flag_values):
    """Every flag of the script, on `flag_values` (tests parse their own)."""
    training_flags.define_fine_tuning_flags(
        data_dir_help="Directory of train.txt, dev.txt and test.txt (`token tag` lines, a "
        "blank line between sentences), or of train.jsonl, dev.jsonl and test.jsonl (one "
        "sentence a line: lists of tokens and tags).",
        do_predict_help="Tag test.txt with model.ckpt-best (test_predictions.txt, "
        "test_results.txt).",
        max_seq_length=128, train_step=1000, warmup_step=0, predict_batch_size=32,
        eval_batch_size=32, train_batch_size=32, learning_rate=5e-5, optimizer="adamw",
        save_checkpoints_steps=500, iterations_per_loop=100, flag_values=flag_values)
    define = cli.Definer(flag_values)
    define.string("tokens_column_name", "tokens", "In .jsonl files: the key of each "
                  "sentence's list of words.")
    define.string("tags_column_name", "tags", "In .jsonl files: the key of the list of "
                  "their tags, one per word.")


def run(flag_values):
    """The whole script on parsed flags; returns the best dev result summary (or None)."""
    start = training_flags.start_fine_tuning(flag_values, ("do_train", "do_eval", "do_predict"))
    job = tagging_run.TaggingJob(
        flag_values.data_dir, flag_values.output_dir, start.albert_config,
        flag_values.max_seq_length, spm_model_file=flag_values.spm_model_file,
        vocab_file=flag_values.vocab_file, do_lower_case=flag_values.do_lower_case,
        batching=start.batching,
        columns=reader.Columns(flag_values.tokens_column_name, flag_values.tags_column_name))
    return training_flags.run_flow(job, flag_values, start.strategy).summary


def entry():
    """Console entry point (`pip install` puts it on PATH as `run_tagging`)."""
    cli.run_script(define_flags, run)


if __name__ == "__main__":
    entry()
