"""Pretraining data made from real text (Brown Corpus) checked against the original algorithm (pairs, masking, features).

The records are read back with TensorFlow, and every check is made from them and from an
independent tokenization of the text with `FullTokenizer` (not the data code's batch path).
Statistical checks use > 10,000 predictions and fail below p = 0.001.
"""

import collections

import numpy as np
import pytest
import tensorflow as tf
from scipy import stats

from albert_tf.text import tokenization
from albert_tf.pretraining import create_data
from albert_tf.pretraining import options as options_lib

MAX_SEQ_LENGTH = 128
MAX_PREDICTIONS = 20
ALPHA = 1e-3
_SP_SPECIAL = set('!"#$%&()*+,-./:;?@[\\]^_`{|}~')
_SP_WORD_CHARS = set("abcdefghijklmnopqrstuvwxyz") | _SP_SPECIAL


def _is_start_piece(piece):
    """The original's SentencePiece start-piece rule, transcribed independently of the library."""
    return (piece.startswith("\u2581") or piece.startswith("<") or piece in _SP_SPECIAL
            or not all(c.lower() in _SP_WORD_CHARS for c in piece))


@pytest.fixture(scope="module")
def dataset(real_data, spm_model_file, tmp_path_factory):
    output = str(tmp_path_factory.mktemp("ptd") / "brown.tfrecord")
    inputs = real_data["brown"][:2]
    options = options_lib.DataOptions(
        spm_model_file=spm_model_file, max_seq_length=MAX_SEQ_LENGTH,
        max_predictions_per_seq=MAX_PREDICTIONS, dupe_factor=1, random_seed=7)
    summary = create_data.create_pretraining_data(",".join(inputs), output, options,
                                                  num_workers=1)
    examples = []
    for i in range(len(inputs)):
        path = f"{output}-{i:05d}-of-{len(inputs):05d}"
        for raw in tf.data.TFRecordDataset(path):
            features = tf.train.Example.FromString(raw.numpy()).features.feature
            examples.append({name: list(f.int64_list.value) or list(f.float_list.value)
                             for name, f in features.items()})
    tokenizer = tokenization.FullTokenizer(None, True, spm_model_file)
    return summary, examples, tokenizer, inputs


def _real(example):
    n = sum(example["input_mask"])
    k = int(sum(example["masked_lm_weights"]))
    return n, example["masked_lm_positions"][:k], example["masked_lm_ids"][:k]


def test_enough_predictions_and_lengths(dataset):
    summary, examples, _, _ = dataset
    assert summary["instances"] == len(examples)
    assert summary["predictions"] >= 10000
    for example in examples:
        assert len(example["input_ids"]) == MAX_SEQ_LENGTH
        assert len(example["masked_lm_ids"]) == MAX_PREDICTIONS
        n = sum(example["input_mask"])
        assert n <= MAX_SEQ_LENGTH
        assert example["input_mask"] == [1] * n + [0] * (MAX_SEQ_LENGTH - n)
        assert example["input_ids"][n:] == [0] * (MAX_SEQ_LENGTH - n)


def test_layout_segment_ids_and_token_boundary(dataset):
    _, examples, tokenizer, _ = dataset
    cls_id, sep_id = tokenizer.vocab["[CLS]"], tokenizer.vocab["[SEP]"]
    pieces = tokenizer.convert_ids_to_tokens(range(len(tokenizer.vocab)))
    for example in examples:
        n, positions, labels = _real(example)
        ids = list(example["input_ids"][:n])
        for p, label in zip(positions, labels):
            ids[p] = label  # The original tokens.
        seps = [i for i, t in enumerate(ids) if t == sep_id]
        assert ids[0] == cls_id and len(seps) == 2 and seps[1] == n - 1 and seps[0] >= 2
        first_sep = seps[0]
        assert example["segment_ids"] == ([0] * (first_sep + 1) + [1] * (n - first_sep - 1)
                                          + [0] * (MAX_SEQ_LENGTH - n))
        expected = [1 if i in (0, first_sep, n - 1) or _is_start_piece(pieces[t]) else 0
                    for i, t in enumerate(ids)]
        assert example["token_boundary"] == expected + [0] * (MAX_SEQ_LENGTH - n)


def _words(ids, first_sep, pieces):
    """The original's whole-word candidates (a non-start first piece of B joins A's last word)."""
    words = []
    for i, t in enumerate(ids):
        if i in (0, first_sep, len(ids) - 1):
            continue
        if words and not _is_start_piece(pieces[t]):
            words[-1].append(i)
        else:
            words.append([i])
    return words


def test_budget_and_whole_words(dataset):
    summary, examples, tokenizer, _ = dataset
    pieces = tokenizer.convert_ids_to_tokens(range(len(tokenizer.vocab)))
    sep_id = tokenizer.vocab["[SEP]"]
    short = 0
    total_tokens = total_predictions = 0
    for example in examples:
        n, positions, labels = _real(example)
        budget = min(MAX_PREDICTIONS, max(1, round(n * 0.15)))
        assert len(positions) <= budget
        short += len(positions) < budget
        total_tokens += n
        total_predictions += len(positions)
        ids = list(example["input_ids"][:n])
        for p, label in zip(positions, labels):
            ids[p] = label
        assert positions == sorted(set(positions)) and all(0 < p < n - 1 for p in positions)
        first_sep = ids.index(sep_id)
        masked = set(positions)
        for word in _words(ids, first_sep, pieces):
            assert len(masked.intersection(word)) in (0, len(word)), (word, positions)
    assert short <= 0.01 * len(examples)
    assert total_predictions / total_tokens == pytest.approx(0.15, abs=0.005)
    assert summary["masked_fraction"] == pytest.approx(total_predictions / total_tokens)


def test_replacement_split_80_10_10(dataset):
    _, examples, tokenizer, _ = dataset
    mask_id = tokenizer.vocab["[MASK]"]
    vocab_size = len(tokenizer.vocab)
    counts = collections.Counter()
    random_ids = []
    for example in examples:
        _, positions, labels = _real(example)
        for p, label in zip(positions, labels):
            token = example["input_ids"][p]
            if token == mask_id:
                counts["mask"] += 1
            elif token == label:
                counts["kept"] += 1
            else:
                counts["random"] += 1
                random_ids.append(token)
    total = sum(counts.values())
    # A random replacement can also draw [MASK] or the original token (1/V each).
    p_mask = 0.8 + 0.1 / vocab_size
    p_kept = 0.1 + 0.1 / vocab_size
    expected = np.array([p_mask, p_kept, 1 - p_mask - p_kept]) * total
    observed = [counts["mask"], counts["kept"], counts["random"]]
    assert stats.chisquare(observed, expected).pvalue > ALPHA
    # Random replacements are uniform over the whole vocabulary.
    assert stats.kstest(np.array(random_ids) + 0.5, stats.uniform(0, vocab_size).cdf
                        ).pvalue > ALPHA


def test_ngram_lengths_follow_one_over_n(dataset):
    summary, _, _, _ = dataset
    sampled = summary["masking"]["sampled_ngram_lengths"]
    observed = [sampled["1"], sampled["2"], sampled["3"]]
    expected = np.array([6, 3, 2]) / 11 * sum(observed)
    assert stats.chisquare(observed, expected).pvalue > ALPHA


def _corpus_index(paths, tokenizer):
    """Every document's token ids (reference tokenization) and a 5-gram -> positions index."""
    docs = [[]]
    for path in paths:
        docs.append([])
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                text = tokenization.preprocess_text(line, lower=True)
                if not text:
                    docs.append([])
                    continue
                docs[-1].extend(tokenizer.convert_tokens_to_ids(tokenizer.tokenize(text)))
    docs = [d for d in docs if d]
    index = collections.defaultdict(list)
    for d, tokens in enumerate(docs):
        for i in range(len(tokens) - 4):
            index[tuple(tokens[i:i + 5])].append((d, i))
    return docs, index


def _locate(segment, docs, index):
    """The unique (document, offset) where `segment` occurs, or None."""
    if len(segment) < 5:
        return None
    hits = [(d, i) for d, i in index.get(tuple(segment[:5]), ())
            if docs[d][i:i + len(segment)] == segment]
    return hits[0] if len(hits) == 1 else None


def test_sentence_order_labels_match_the_text(dataset):
    """Label 0 iff A precedes B in the same document; same-document pairs swap with p 0.5."""
    summary, examples, tokenizer, inputs = dataset
    docs, index = _corpus_index(inputs, tokenizer)
    sep_id = tokenizer.vocab["[SEP]"]
    located = swapped = other_document = 0
    for example in examples:
        n, positions, labels = _real(example)
        ids = list(example["input_ids"][:n])
        for p, label in zip(positions, labels):
            ids[p] = label
        first_sep = ids.index(sep_id)
        a = _locate(ids[1:first_sep], docs, index)
        b = _locate(ids[first_sep + 1:n - 1], docs, index)
        if a is None or b is None:
            continue
        located += 1
        label = example["next_sentence_labels"][0]
        if a[0] != b[0]:
            other_document += 1
            assert label == 1
        else:
            assert label == (0 if a[1] < b[1] else 1)
            swapped += label
    same_document = located - other_document
    assert located > 0.8 * len(examples)
    assert other_document > 0
    assert stats.binomtest(swapped, same_document, 0.5).pvalue > ALPHA
    kinds = summary["sentence_order"]
    assert kinds["label_1"] == sum(e["next_sentence_labels"][0] for e in examples)
    assert kinds["label_1"] == kinds["swapped"] + kinds["random_document"]
