"""run_tagging.py: CoNLL-style files, first-piece labels, word accuracy and BIO span F1, and a
model fine-tuned on the Brown Corpus's own part-of-speech tags that beats the
most-frequent-tag-per-word baseline."""

import collections
import json
import os

from absl import flags
import numpy as np
import pytest
import tensorflow as tf

from albert_tf import errors
from albert_tf.demo import data_sources
from albert_tf.text import tokenization
from albert_tf.scripts import run_tagging
from albert_tf.tagging import features, metrics, reader


def _write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_reader_takes_first_and_last_columns_and_names_bad_lines(tmp_path):
    path = _write(tmp_path / "train.txt", "-DOCSTART- -X- O\n\nEU NNP B-ORG\nrejects VBZ O\n\n\n"
                                          "Peter NNP B-PER\n")
    sentences = reader.read_sentences(path)
    assert [(s.words, s.tags, s.line) for s in sentences] == [
        (("EU", "rejects"), ("B-ORG", "O"), 3), (("Peter",), ("B-PER",), 7)]
    bad = _write(tmp_path / "bad.txt", "The at\nFulton\n")
    with pytest.raises(errors.UserInputError, match=r"bad.txt, line 2: expected 'token tag', got "
                                                 r"'Fulton'"):
        reader.read_sentences(bad)
    one_per_line = _write(tmp_path / "sentences.txt", "The jury said\tat nn vbd\n"
                                                      "It was fine\tpps bedz jj\n")
    with pytest.raises(errors.UserInputError, match=r"sentences.txt, line 1: the tab-separated "
                                                 r"column 'The jury said' holds 3 words"):
        reader.read_sentences(one_per_line)
    tags_only = _write(tmp_path / "tags.txt", "EU\tNNP\tB-ORG\nrejects\tB-X I-X\n")
    with pytest.raises(errors.UserInputError, match=r"tags.txt, line 2: .*'B-X I-X' holds 2"):
        reader.read_sentences(tags_only)
    tabs = _write(tmp_path / "tabs.txt", "EU\tNNP\tB-ORG\nrejects \tVBZ\tO\n")
    assert reader.read_sentences(tabs)[0].tags == ("B-ORG", "O")  # tab-separated CoNLL is read
    with pytest.raises(errors.UserInputError, match=r"empty.txt: no sentences"):
        reader.read_sentences(_write(tmp_path / "empty.txt", "\n\n"))
    with pytest.raises(errors.UserInputError, match=r"missing.txt: tagging file not found"):
        reader.read_sentences(str(tmp_path / "missing.txt"))


def test_bio_spans_follow_the_conll_rules():
    assert metrics.bio_spans(["B-PER", "I-PER", "O", "B-LOC"]) == {(0, 2, "PER"), (3, 4, "LOC")}
    # An I- that does not continue a span of its type starts one (conlleval's rule).
    assert metrics.bio_spans(["O", "I-PER", "I-LOC", "B-LOC", "I-LOC"]) == {
        (1, 2, "PER"), (2, 3, "LOC"), (3, 5, "LOC")}
    assert metrics.is_bio(["O", "B-NAME", "I-NAME"]) and not metrics.is_bio(["nn", "O"])


def test_span_f1_by_hand():
    gold = [["B-NAME", "I-NAME", "O", "B-NAME"], ["O", "B-NAME"]]
    predicted = [["B-NAME", "I-NAME", "O", "O"], ["B-NAME", "B-NAME"]]
    results = metrics.tagging_metrics(gold, predicted, bio=True)
    # gold spans 3, predicted 3, correct 2 (the first and the last); words right 4 of 6.
    assert results["precision"] == pytest.approx(200 / 3)
    assert results["recall"] == pytest.approx(200 / 3)
    assert results["f1"] == pytest.approx(200 / 3)
    assert results["eval_accuracy"] == pytest.approx(4 / 6)
    assert set(metrics.tagging_metrics(gold, gold, bio=False)) == {"eval_accuracy"}


def test_labels_sit_on_the_first_piece_of_each_word(spm_model_file):
    tokenizer = tokenization.FullTokenizer(None, True, spm_model_file)
    pieces = features.WordPieces(tokenizer, do_lower_case=True)
    sentence = reader.Sentence(("Unforgettable", "jurors", "."), ("jj", "nns", "."), 1)
    label_map = {"jj": 3, "nns": 5, ".": 7}
    example, kept = features.convert(sentence, 4, pieces, label_map, max_seq_length=32)
    values = {name: list(feature.int64_list.value)
              for name, feature in example.features.feature.items()}
    lengths = [len(pieces(word)) for word in sentence.words]
    assert lengths[0] > 1 and kept == 3  # the first word splits into several pieces
    starts = [1, 1 + lengths[0], 1 + lengths[0] + lengths[1]]
    assert [i for i, w in enumerate(values["label_weights"]) if w] == starts
    assert [values["label_ids"][i] for i in starts] == [3, 5, 7]
    assert sum(values["input_mask"]) == sum(lengths) + 2 and values["sentence_index"] == [4]
    _, kept = features.convert(sentence, 0, pieces, label_map, max_seq_length=2 + lengths[0])
    assert kept == 1  # words past max_seq_length - 2 pieces are cut


def test_brown_tags_simplified_and_names_as_bio():
    assert [data_sources.simple_tag(t) for t in ("np-tl", "NN-HL", "fw-in", "--", "pps+bez")] == [
        "np", "nn", "fw", "--", "pps+bez"]
    assert data_sources.name_tags(["at", "np", "np$", "nn", "np"]) == [
        "O", "B-NAME", "I-NAME", "O", "B-NAME"]


def _slice(real_data, kind, tmp_path, sizes):
    """The first sentences of each Brown split (kind: pos or names) in a data dir of its own."""
    directory = tmp_path / kind
    for split, count in sizes.items():
        with open(real_data["brown_tagging"][kind][split], encoding="utf-8") as reader_:
            blocks = reader_.read().split("\n\n")[:count]
        _write(directory / f"{split}.txt", "\n\n".join(blocks) + "\n")
    return str(directory)


def _most_frequent_tag_baseline(data_dir, words_that_fit):
    """Dev accuracy of tagging each word with its most frequent training tag (unseen words: the
    most frequent tag overall), over the words the model is scored on."""
    train = reader.read_sentences(os.path.join(data_dir, "train.txt"))
    by_word = collections.defaultdict(collections.Counter)
    overall = collections.Counter()
    for sentence in train:
        for word, tag in zip(sentence.words, sentence.tags):
            by_word[word][tag] += 1
            overall[tag] += 1
    default = overall.most_common(1)[0][0]
    dev = reader.read_sentences(os.path.join(data_dir, "dev.txt"))
    pairs = [(tag, by_word[word].most_common(1)[0][0] if word in by_word else default)
             for sentence in dev
             for word, tag in list(zip(sentence.words, sentence.tags))[:words_that_fit(sentence)]]
    return sum(gold == guess for gold, guess in pairs) / len(pairs)


def _run(data_dir, output_dir, config_file, spm_model_file, *extra):
    flag_values = flags.FlagValues()
    run_tagging.define_flags(flag_values)
    flag_values(["run_tagging.py", f"--data_dir={data_dir}", f"--output_dir={output_dir}",
                 f"--albert_config_file={config_file}", f"--spm_model_file={spm_model_file}",
                 "--max_seq_length=64", "--train_batch_size=32", "--eval_batch_size=64",
                 "--predict_batch_size=64", "--allow_random_init", "--seed=1", *extra])
    return run_tagging.run(flag_values)


@pytest.fixture(scope="module")
def tiny_config(tmp_path_factory):
    path = tmp_path_factory.mktemp("tagging") / "albert_config.json"
    path.write_text(json.dumps(dict(
        vocab_size=4000, embedding_size=32, hidden_size=64, num_hidden_layers=2,
        num_attention_heads=4, intermediate_size=128, max_position_embeddings=64,
        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)))
    return str(path)


@pytest.mark.slow
def test_part_of_speech_beats_the_most_frequent_tag_per_word(real_data, spm_model_file,
                                                             tiny_config, tmp_path):
    data_dir = _slice(real_data, "pos", tmp_path, {"train": 12000, "dev": 400, "test": 200})
    out = tmp_path / "out"
    summary = _run(data_dir, out, tiny_config, spm_model_file, "--do_train", "--do_eval",
                   "--do_predict", "--train_step=4800", "--warmup_step=480",
                   "--learning_rate=1.5e-3", "--save_checkpoints_steps=1200",
                   "--keep_checkpoint_max=1")
    pieces = features.WordPieces(tokenization.FullTokenizer(None, True, spm_model_file), True)
    labels = {tag: 0 for tag in reader.label_list(data_dir)}
    baseline = _most_frequent_tag_baseline(
        data_dir, lambda sentence: features.convert(sentence, 0, pieces, labels, 64)[1])
    assert summary["best_value"] > baseline, (summary, baseline)  # 88.1% vs 87.3% (2026-11-25)
    text = (out / "eval_results.txt").read_text()
    steps = [line for line in text.splitlines() if line.startswith("global_step = ")]
    assert steps == [f"global_step = {step}" for step in (1200, 2400, 3600, 4800)]  # one kept
    lines = [line.split() for line in (out / "test_predictions.txt").read_text().splitlines()
             if line]
    test = reader.read_sentences(os.path.join(data_dir, "test.txt"))
    assert [(word, gold) for word, gold, _ in lines] == [
        pair for sentence in test for pair in zip(sentence.words, sentence.tags)]
    scored = [(gold, predicted) for _, gold, predicted in lines if predicted != "_"]
    assert len(scored) < len(lines)  # some words did not fit in 64 pieces: written "_"
    right = np.mean([gold == predicted for gold, predicted in scored])
    results = dict(line.split(" = ") for line in (out / "test_results.txt").read_text().splitlines())
    assert float(results["eval_accuracy"]) == pytest.approx(right, abs=1e-6) and right > 0.5


@pytest.mark.slow
def test_names_are_scored_by_span_f1(real_data, spm_model_file, tiny_config, tmp_path):
    data_dir = _slice(real_data, "names", tmp_path, {"train": 1500, "dev": 300, "test": 100})
    out = tmp_path / "out"
    # Cased input: names are capitalised. At 2e-3, or lowercased, this model predicted no name on
    # some CPUs (every tag O); here seeds 1-3 give F1 41-47 with oneDNN and with Eigen.
    summary = _run(data_dir, out, tiny_config, spm_model_file, "--do_train", "--do_eval",
                   "--train_step=300", "--warmup_step=30", "--learning_rate=1e-3",
                   "--do_lower_case=false", "--save_checkpoints_steps=300", "--length_buckets=off")
    text = (out / "eval_results.txt").read_text()
    assert "best_f1 = " in text and "precision = " in text and "recall = " in text
    assert 20 < summary["best_value"] <= 100, summary
    assert (out / "labels.txt").read_text().split() == ["B-NAME", "I-NAME", "O"]
    assert tf.io.gfile.exists(str(out / "model.ckpt-best.index"))


def test_json_lines_are_read_as_conll_and_bad_lines_are_named(tmp_path):
    conll = _write(tmp_path / "conll" / "train.txt", "EU B-ORG\nrejects O\n\nPeter B-PER\n")
    lines = _write(tmp_path / "jsonl" / "train.jsonl",
                   '{"tokens": ["EU", "rejects"], "tags": ["B-ORG", "O"]}\n\n'
                   '{"tokens": ["Peter"], "tags": ["B-PER"]}\n')
    assert [(s.words, s.tags) for s in reader.read_sentences(lines)] == [
        (s.words, s.tags) for s in reader.read_sentences(conll)]
    assert reader.split_path(str(tmp_path / "jsonl"), "train") == lines  # no train.txt there
    assert reader.label_list(str(tmp_path / "jsonl")) == ["B-ORG", "B-PER", "O"]
    renamed = _write(tmp_path / "ner.jsonl", '{"words": ["EU"], "ner_tags": ["B-ORG"]}\n')
    assert reader.read_sentences(renamed, reader.Columns("words", "ner_tags"))[0].tags == (
        "B-ORG",)
    for text, message in [
            ('{"tokens": ["EU"]}\n', r"line 1: no key 'tags'.*--tags_column_name"),
            ('{"tokens": ["EU"], "tags": ["O"]}\n{"tokens": ["a", "b"], "tags": ["O"]}\n',
             r"line 2: 2 tokens but 1 tags"),
            ('{"tokens": ["EU rejects"], "tags": ["O"]}\n', r"line 1, key 'tokens': expected"),
            ('{"tokens": ["EU"], "tags": [1]}\n', r"line 1, key 'tags': expected"),
            ('["EU", "O"]\n', r"line 1: expected a JSON object per line, got list"),
            ('{"tokens": ["EU"], \n', r"line 1: not JSON")]:
        bad = _write(tmp_path / "bad.jsonl", text)
        with pytest.raises(errors.UserInputError, match=r"bad.jsonl, " + message):
            reader.read_sentences(bad)
    with pytest.raises(errors.UserInputError, match=r"empty.jsonl: no sentences"):
        reader.read_sentences(_write(tmp_path / "empty.jsonl", "\n"))


@pytest.mark.slow
def test_json_lines_train_exactly_as_the_same_sentences_in_conll(real_data, spm_model_file,
                                                                  tiny_config, tmp_path):
    """The JSON Lines copy of a CoNLL slice, under other keys, gives the same dev scores and
    test predictions: the files differ, the run does not."""
    conll_dir = _slice(real_data, "names", tmp_path, {"train": 300, "dev": 60, "test": 30})
    json_dir = tmp_path / "names_jsonl"
    for split in ("train", "dev", "test"):
        sentences = reader.read_sentences(os.path.join(conll_dir, f"{split}.txt"))
        _write(json_dir / f"{split}.jsonl", "".join(
            json.dumps({"words": s.words, "ner_tags": s.tags}) + "\n" for s in sentences))
    common = ("--do_train", "--do_eval", "--do_predict", "--train_step=20", "--warmup_step=2",
              "--learning_rate=1e-3", "--save_checkpoints_steps=20", "--length_buckets=off")
    _run(conll_dir, tmp_path / "conll_out", tiny_config, spm_model_file, *common)
    _run(str(json_dir), tmp_path / "json_out", tiny_config, spm_model_file, *common,
         "--tokens_column_name=words", "--tags_column_name=ner_tags")
    for name in ("eval_results.txt", "test_predictions.txt", "labels.txt"):
        assert (tmp_path / "json_out" / name).read_text() == (
            tmp_path / "conll_out" / name).read_text(), name
    assert "best_f1 = " in (tmp_path / "json_out" / "eval_results.txt").read_text()
