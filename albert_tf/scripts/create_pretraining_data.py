"""Raw text to ALBERT pretraining TFRecords (n-gram MLM masking + sentence-order pairs).

  python create_pretraining_data.py --input_file='corpus/*.txt' \\
      --output_file=data/pretrain.tfrecord --spm_model_file=30k-clean.model \\
      --max_seq_length=512 --max_predictions_per_seq=20 --dupe_factor=5

The original's flags, defaults and meanings, plus --num_workers, --shuffle_buffer_size,
--runner and --beam_options. --vocab_file is only needed without --spm_model_file. The output
is byte-identical for the same inputs and flags whatever --num_workers or the runner is;
`<first output>.summary.json` has the counts. On Apache Beam (e.g. Dataflow), or on a
dask.distributed cluster through Beam's DaskRunner:

  python create_pretraining_data.py ... --runner=DirectRunner \\
      --beam_options="--direct_num_workers=2 --direct_running_mode=multi_processing"
  python create_pretraining_data.py ... --runner=DaskRunner \\
      --beam_options="--dask_client_address=tcp://scheduler:8786"
"""

from absl import flags

from albert_tf import cli
from albert_tf.pretraining import create_data
from albert_tf.pretraining import options as options_lib


def define_flags(flag_values):
    """Every flag of the script, on `flag_values` (tests parse their own)."""
    define = cli.Definer(flag_values)
    define.string("input_file", None, "Input raw text file (or comma-separated list of files "
                  "and globs): one sentence per line, a blank line between documents.")
    define.string("output_file", None, "Output TFRecord file. With several input files, one "
                  "output per input: <output_file>-00000-of-0000N, ... A comma-separated "
                  "list instead distributes all instances round-robin over those files.")
    define.string("vocab_file", None, "The vocabulary file that the ALBERT model was trained "
                  "on (WordPiece); not needed when --spm_model_file is given.")
    define.string("spm_model_file", None, "The model file for sentence piece tokenization.")
    define.string("input_file_mode", "r", "The data format of the input file ('r' or 'rb'; "
                  "input is always read as UTF-8 with bad bytes replaced and counted).")
    define.bool("do_lower_case", True, "Whether to lower case the input text. Should be True "
                "for uncased models and False for cased models.")
    define.bool("do_whole_word_mask", True, "Whether to use whole word masking rather than "
                "per-WordPiece masking.")
    define.bool("do_permutation", False, "Whether to do the permutation training; doubles "
                "the length of the masked_lm_* features.")
    define.bool("favor_shorter_ngram", True, "Whether to set higher probabilities for "
                "sampling shorter ngrams (p(n) proportional to 1/n; reversed if False).")
    define.bool("random_next_sentence", False, "Whether to use the sentence that's right "
                "before the current sentence as the negative sample for next sentence "
                "prediction, rather than using sentences from other random documents. "
                "(False = sentence-order prediction by swapping; True = BERT NSP.)")
    define.integer("max_seq_length", 512, "Maximum sequence length.", lower_bound=5)
    define.integer("ngram", 3, "Maximum number of ngrams to mask.", lower_bound=1)
    define.integer("max_predictions_per_seq", 20, "Maximum number of masked LM predictions "
                   "per sequence.", lower_bound=1)
    define.integer("random_seed", 12345, "Random seed for data generation.")
    define.integer("dupe_factor", 40, "Number of times to duplicate the input data (with "
                   "different masks).", lower_bound=1)
    define.float("masked_lm_prob", 0.15, "Masked LM probability.", lower_bound=0, upper_bound=1)
    define.float("short_seq_prob", 0.1, "Probability of creating sequences which are shorter "
                 "than the maximum length.", lower_bound=0, upper_bound=1)
    define.integer("num_workers", None, "Worker processes (input files are processed in "
                   "parallel); default: all cores. The output does not depend on it.", lower_bound=1)
    define.string("runner", "local", "'local': worker processes on this machine "
                  "(--num_workers). Or an Apache Beam runner (DirectRunner, DaskRunner, "
                  "DataflowRunner, FlinkRunner, SparkRunner, PrismRunner, ...): the same output "
                  "files, byte for byte; see docs/pretraining_data.md.")
    define.string("beam_options", None, "With a Beam --runner: its pipeline options as one "
                  "string, e.g. \"--direct_num_workers=2 --direct_running_mode=multi_processing\", "
                  "\"--dask_client_address=tcp://scheduler:8786\" for a dask.distributed "
                  "cluster, or \"--project=P --region=R --temp_location=gs://B/tmp\" for "
                  "Dataflow.")
    define.integer("shuffle_buffer_size", 10000, "Instances per input file held to shuffle "
                   "the output order (the original held and shuffled all of them).", lower_bound=1)
    flags.mark_flag_as_required("input_file", flag_values=flag_values)
    flags.mark_flag_as_required("output_file", flag_values=flag_values)


def run(flag_values):
    """The whole script on parsed flags."""
    options = cli.dataclass_from_flags(options_lib.DataOptions, flag_values)
    create_data.create_pretraining_data(flag_values.input_file, flag_values.output_file, options,
                                        num_workers=flag_values.num_workers,
                                        runner=flag_values.runner,
                                        beam_options=flag_values.beam_options)


def entry():
    """Console entry point (`pip install` puts it on PATH as `create_pretraining_data`)."""
    cli.run_script(define_flags, run)


if __name__ == "__main__":
    entry()
