"""Writes a GLUE task folder from `make data`'s movie reviews, for run_classifier.py.

    python -m albert_tf.glue.movie_reviews_task --movie_reviews_file=data/movie_reviews.tsv \
        --task_name=sst-2 --output_dir=glue_data/SST-2

`sst-2` writes SST-2's layout (`sentence<TAB>label`; the neutral sentences dropped), `sts-b`
STS-B's (the rating rescaled to [0, 5] as the score); `albert_tf.glue.movie_reviews` says how.
`run_classifier.py --task_name=<task> --data_dir=glue_data` then reads the folder. The files are
written atomically, and a second run with the same input leaves them untouched.
"""

from absl import flags, logging

from albert_tf import cli
from albert_tf.glue import movie_reviews

WRITERS = {"sst-2": movie_reviews.write_sst2_task, "sts-b": movie_reviews.write_stsb_task}


def define_flags(flag_values):
    """The command's flags, on `flag_values` (nothing is defined at import: tests import this)."""
    define = cli.Definer(flag_values)
    define.string("movie_reviews_file", "data/movie_reviews.tsv", "The reviews as `make data` "
                  "writes them: `id<TAB>score<TAB>text` lines.")
    define.enum("task_name", "sst-2", sorted(WRITERS), "The GLUE layout to write.")
    define.string("output_dir", None, "The task folder to write train.tsv, dev.tsv and test.tsv "
                  "into, e.g. glue_data/SST-2 (run_classifier.py's --data_dir is its parent).")
    flags.mark_flag_as_required("output_dir", flag_values=flag_values)


def run(flag_values):
    paths = WRITERS[flag_values.task_name](flag_values.movie_reviews_file, flag_values.output_dir)
    for split, path in sorted(paths.items()):
        with open(path, encoding="utf-8") as reader:
            logging.info("%s: %s, %d examples", split, path, sum(1 for _ in reader) - 1)


if __name__ == "__main__":
    cli.run_script(define_flags, run)
