"""What a model must beat: scores of rules that need no model, on the same dev data.

Tagging: the most frequent training tag of each word (unseen words get the most frequent tag
overall), and that most frequent tag everywhere. Words are looked up as the model sees them
(run_tagging.py's default --do_lower_case: ALBERT's normalisation, lower-cased), so the rule
gets the same view of the text as the model it is compared with. Sentiment: the majority label
of dev.
"""

import collections
import os

from albert_tf.text import tokenization


def read_tagged(path):
    """[[(word, tag)]] of a run_tagging.py `word tag` file (a blank line between sentences)."""
    sentences, current = [], []
    with open(path) as reader:
        for number, line in enumerate(reader, 1):
            fields = line.split()
            if not fields:
                if current:
                    sentences.append(current)
                current = []
                continue
            if len(fields) != 2:
                raise ValueError(f"{path}:{number}: expected `word tag`, found {line.strip()!r}")
            current.append((fields[0], fields[1]))
    if current:
        sentences.append(current)
    return sentences


def tagging_baselines(train_path, dev_path, lower_case=True):
    """{"most_frequent_tag_per_word", "majority_tag"}: word accuracies on dev of the two rules
    fitted on train, words normalised as the model normalises them (`lower_case`: as
    --do_lower_case), and the number of tags seen in train."""
    by_word = collections.defaultdict(collections.Counter)
    overall = collections.Counter()
    normal = lambda word: tokenization.preprocess_text(word, lower=lower_case)  # noqa: E731
    for sentence in read_tagged(train_path):
        for word, tag in sentence:
            word = normal(word)
            by_word[word][tag] += 1
            overall[tag] += 1
    if not overall:
        raise ValueError(f"{train_path}: no tagged words")
    majority = overall.most_common(1)[0][0]
    words = [(normal(word), tag) for sentence in read_tagged(dev_path) for word, tag in sentence]
    if not words:
        raise ValueError(f"{dev_path}: no tagged words")
    per_word = sum(tag == (by_word[word].most_common(1)[0][0] if word in by_word else majority)
                   for word, tag in words)
    return {"most_frequent_tag_per_word": per_word / len(words),
            "majority_tag": sum(tag == majority for _, tag in words) / len(words),
            "tags": len(overall)}


def majority_label_rate(tsv_path):
    """The fraction of the most frequent label in an SST-2 style `sentence<TAB>label` file."""
    with open(tsv_path) as reader:
        labels = [line.rstrip("\n").split("\t")[-1] for line in reader.readlines()[1:] if line.strip()]
    if not labels:
        raise ValueError(f"{tsv_path}: no labelled rows after the header")
    return collections.Counter(labels).most_common(1)[0][1] / len(labels)


def _first_sentences(path, limit, directory):
    """A copy of the first `limit` sentences of `path` in `directory` (as the study slices)."""
    with open(path) as reader:
        blocks = reader.read().strip().split("\n\n")[:limit]
    copy = os.path.join(directory, os.path.basename(path))
    with open(copy, "w") as writer:
        writer.write("\n\n".join(blocks) + "\n")
    return copy


def main(argv=None):
    """The tagging baselines on the study's slices of Brown POS (the first `--train_sentences`
    of train, `--dev_sentences` of dev), by exact word form and lower-cased as the model sees
    words, written as a results file with its command and date."""
    import argparse
    import datetime
    import json
    import sys
    import tempfile

    from albert_tf.files import io_utils

    parser = argparse.ArgumentParser(description=main.__doc__.split("\n\n")[0])
    parser.add_argument("--data_dir", default="data")
    parser.add_argument("--train_sentences", type=int, default=4000)
    parser.add_argument("--dev_sentences", type=int, default=1000)
    parser.add_argument("--output", required=True)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as directory:
        train = _first_sentences(os.path.join(args.data_dir, "brown_pos", "train.txt"),
                                 args.train_sentences, directory)
        dev = _first_sentences(os.path.join(args.data_dir, "brown_pos", "dev.txt"),
                               args.dev_sentences, directory)
        result = {"command": " ".join(["python -m albert_tf.demo.baselines", *(argv or sys.argv[1:])]),
                  "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%MZ"),
                  "train_sentences": args.train_sentences, "dev_sentences": args.dev_sentences,
                  "lower_cased": tagging_baselines(train, dev, lower_case=True),
                  "exact_form": tagging_baselines(train, dev, lower_case=False)}
    io_utils.atomic_write_text(args.output, json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
