"""Word-level tagging metrics: token accuracy, and span precision / recall / F1 for BIO tags.

Spans follow the CoNLL evaluation: a span starts at `B-X`, or at an `I-X` that does not continue
a span of type X, and runs over the following `I-X`; a predicted span counts only if its start,
end and type all match a gold span.
"""


def is_bio(labels):
    """Whether a label set is BIO: every label is `O` or starts with `B-` / `I-`."""
    return all(label == "O" or label[:2] in ("B-", "I-") for label in labels)


def bio_spans(tags):
    """{(start, end exclusive, type)} of one sentence's tags."""
    spans, start, kind = set(), None, None
    for index, tag in enumerate(list(tags) + ["O"]):
        prefix, _, tag_type = tag.partition("-")
        continues = prefix == "I" and tag_type == kind and start is not None
        if start is not None and not continues:
            spans.add((start, index, kind))
            start, kind = None, None
        if prefix == "B" or (prefix == "I" and not continues):
            start, kind = index, tag_type
    return spans


def tagging_metrics(gold_sentences, predicted_sentences, bio):
    """`eval_accuracy` over words; with `bio` also span `precision`, `recall` and `f1` (%)."""
    pairs = [(g, p) for gold, predicted in zip(gold_sentences, predicted_sentences)
             for g, p in zip(gold, predicted)]
    results = {"eval_accuracy": sum(g == p for g, p in pairs) / max(len(pairs), 1)}
    if bio:
        found = correct = expected = 0
        for gold, predicted in zip(gold_sentences, predicted_sentences):
            gold_spans, predicted_spans = bio_spans(gold), bio_spans(predicted)
            found += len(predicted_spans)
            expected += len(gold_spans)
            correct += len(gold_spans & predicted_spans)
        precision = 100.0 * correct / found if found else 0.0
        recall = 100.0 * correct / expected if expected else 0.0
        results.update(precision=precision, recall=recall,
                       f1=2 * precision * recall / (precision + recall) if correct else 0.0)
    return results
