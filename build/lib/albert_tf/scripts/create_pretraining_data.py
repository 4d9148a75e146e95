"""Raw text to ALBERT pretraining TFRecords (n-gram MLM masking + sentence-order pairs).

  python create_pretraining_data.py --input_file='corpus/*.txt' \\
      --output_file=data/pretrain.tfrecord --spm_model_file=30k-clean.model \\
      --max_seq_length=512 --max_predictions_per_seq=20 --dupe_factor=5

The original's flags, defaults and meanings, plus --num_workers and --shuffle_buffer_size.
--vocab_file is only needed without --spm_model_file. The output is byte-identical for the
same inputs and flags whatever --num_workers is; `<first output>.summary.json` has the counts.
"""

from absl import flags

from albert_tf import cli
from albert_tf.pretraining import create_data
from albert_tf.pretraining import options as options_lib

FLAGS = flags.FLAGS
flags.DEFINE_string("input_file", None, "Input raw text file (or comma-separated list of files "
                    "and globs): one sentence per line, a blank line between documents.")
flags.DEFINE_string("output_file", None, "Output TFRecord file. With several input files, one "
                    "output per input: <output_file>-00000-of-0000N, ... A comma-separated "
                    "list instead distributes all instances round-robin over those files.")
flags.DEFINE_string("vocab_file", None, "The vocabulary file that the ALBERT model was trained "
                    "on (WordPiece); not needed when --spm_model_file is given.")
flags.DEFINE_string("spm_model_file", None, "The model file for sentence piece tokenization.")
flags.DEFINE_string("input_file_mode", "r", "The data format of the input file ('r' or 'rb'; "
                    "input is always read as UTF-8 with bad bytes replaced and counted).")
flags.DEFINE_bool("do_lower_case", True, "Whether to lower case the input text. Should be True "
                  "for uncased models and False for cased models.")
flags.DEFINE_bool("do_whole_word_mask", True, "Whether to use whole word masking rather than "
                  "per-WordPiece masking.")
flags.DEFINE_bool("do_permutation", False, "Whether to do the permutation training; doubles "
                  "the length of the masked_lm_* features.")
flags.DEFINE_bool("favor_shorter_ngram", True, "Whether to set higher probabilities for "
                  "sampling shorter ngrams (p(n) proportional to 1/n; reversed if False).")
flags.DEFINE_bool("random_next_sentence", False, "Whether to use the sentence that's right "
                  "before the current sentence as the negative sample for next sentence "
                  "prediction, rather than using sentences from other random documents. "
                  "(False = sentence-order prediction by swapping; True = BERT NSP.)")
flags.DEFINE_integer("max_seq_length", 512, "Maximum sequence length.", lower_bound=5)
flags.DEFINE_integer("ngram", 3, "Maximum number of ngrams to mask.", lower_bound=1)
flags.DEFINE_integer("max_predictions_per_seq", 20, "Maximum number of masked LM predictions "
                     "per sequence.", lower_bound=1)
flags.DEFINE_integer("random_seed", 12345, "Random seed for data generation.")
flags.DEFINE_integer("dupe_factor", 40, "Number of times to duplicate the input data (with "
                     "different masks).", lower_bound=1)
flags.DEFINE_float("masked_lm_prob", 0.15, "Masked LM probability.", lower_bound=0, upper_bound=1)
flags.DEFINE_float("short_seq_prob", 0.1, "Probability of creating sequences which are shorter "
                   "than the maximum length.", lower_bound=0, upper_bound=1)
flags.DEFINE_integer("num_workers", None, "Worker processes (input files are processed in "
                     "parallel); default: all cores. The output does not depend on it.", lower_bound=1)
flags.DEFINE_integer("shuffle_buffer_size", 10000, "Instances per input file held to shuffle "
                     "the output order (the original held and shuffled all of them).", lower_bound=1)
flags.mark_flag_as_required("input_file")
flags.mark_flag_as_required("output_file")


def main(argv):
    del argv
    options = options_lib.DataOptions(
        vocab_file=FLAGS.vocab_file, spm_model_file=FLAGS.spm_model_file,
        input_file_mode=FLAGS.input_file_mode, do_lower_case=FLAGS.do_lower_case,
        do_whole_word_mask=FLAGS.do_whole_word_mask, do_permutation=FLAGS.do_permutation,
        favor_shorter_ngram=FLAGS.favor_shorter_ngram,
        random_next_sentence=FLAGS.random_next_sentence, max_seq_length=FLAGS.max_seq_length,
        ngram=FLAGS.ngram, max_predictions_per_seq=FLAGS.max_predictions_per_seq,
        random_seed=FLAGS.random_seed, dupe_factor=FLAGS.dupe_factor,
        masked_lm_prob=FLAGS.masked_lm_prob, short_seq_prob=FLAGS.short_seq_prob,
        shuffle_buffer_size=FLAGS.shuffle_buffer_size)
    create_data.create_pretraining_data(FLAGS.input_file, FLAGS.output_file, options,
                                        num_workers=FLAGS.num_workers)


def entry():
    """Console entry point (`pip install` puts it on PATH as `create_pretraining_data`)."""
    cli.run(main)


if __name__ == "__main__":
    entry()
