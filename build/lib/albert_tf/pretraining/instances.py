"""Segment pairs A/B with the sentence-order (SOP) or next-sentence (NSP) label.

The algorithm is the original `create_instances_from_document`, working on sentence offsets
instead of lists of token lists:
* target length max_seq_length - 3, or with probability short_seq_prob randint(2, that);
* sentences accumulate until the document ends or the chunk reaches the target; A is the first
  randint(1, n-1) sentences of an n-sentence chunk (1 if n == 1);
* a one-sentence chunk (always, SOP mode too), or in NSP mode with probability 0.5: B comes
  from a random other document (10 tries), from a random sentence on until it reaches
  target - len(A); the chunk's unused sentences are put back; label 1;
* SOP mode with probability 0.5: B is the rest of the chunk and A/B are swapped; label 1;
* otherwise B is the rest of the chunk in order; label 0;
* `truncate_seq_pair` trims the pair to max_seq_length - 3 tokens.

"Random other document" means another document of the same input file: files are processed
independently (in parallel, with memory bounded by one file), where the original drew from the
whole corpus.
"""

import bisect

# How a pair was made; the label (next_sentence_labels) is 1 for all but IN_ORDER.
IN_ORDER, SWAPPED, RANDOM_DOCUMENT = 0, 1, 2


def truncation_counts(len_a, len_b, max_num_tokens, rng):
    """How many tokens `truncate_seq_pair` removes from the (front, back) of A and of B.

    The original removes one token at a time from the longer segment (from B on a tie), from its
    front or back with probability 0.5. Which segment loses each token does not depend on the
    coin flips, so the removals per segment are computed directly and each segment's front
    count is one Binomial(removed, 0.5) draw: the same distribution, without a Python loop over
    every removed token (a 10,000-token line would otherwise take 10,000 iterations).
    """
    remaining = len_a + len_b - max_num_tokens
    if remaining <= 0:
        return (0, 0), (0, 0)
    removed_a = removed_b = 0
    if len_a > len_b:
        removed_a = min(remaining, len_a - len_b)
    else:
        removed_b = min(remaining, len_b - len_a)
    remaining -= removed_a + removed_b
    # Equal lengths from here on: B loses the next token (a tie), then A, then B, ...
    removed_b += (remaining + 1) // 2
    removed_a += remaining // 2
    front_a = bin(rng.getrandbits(removed_a)).count("1") if removed_a else 0
    front_b = bin(rng.getrandbits(removed_b)).count("1") if removed_b else 0
    return (front_a, removed_a - front_a), (front_b, removed_b - front_b)


def truncate_seq_pair(tokens_a, tokens_b, max_num_tokens, rng):
    """Truncates the two lists in place to at most `max_num_tokens` tokens in total."""
    (front_a, back_a), (front_b, back_b) = truncation_counts(
        len(tokens_a), len(tokens_b), max_num_tokens, rng)
    del tokens_a[len(tokens_a) - back_a:]
    del tokens_a[:front_a]
    del tokens_b[len(tokens_b) - back_b:]
    del tokens_b[:front_b]


def _trimmed(tokens, front, back):
    return tokens[front:len(tokens) - back]


def _random_other_document(num_documents, document_index, rng):
    for _ in range(10):
        index = rng.randrange(num_documents)
        if index != document_index:
            break
    return index


def _random_segment(document, target_length, rng):
    """From a random sentence on, whole sentences until `target_length` tokens or the end."""
    bounds = document.bounds
    start = rng.randrange(document.num_sentences)
    end = bisect.bisect_left(bounds, bounds[start] + target_length, start + 1)
    end = min(end, document.num_sentences)
    return document.tokens[bounds[start]:bounds[end]]


def segment_pairs(documents, document_index, max_num_tokens, short_seq_prob,
                  random_next_sentence, rng):
    """Yields (tokens_a, tokens_b, kind) for one document, already truncated.

    Segments are slices of the document's id array (so any sequence type with slicing).
    """
    document = documents[document_index]
    bounds = document.bounds
    tokens = document.tokens
    num_sentences = document.num_sentences
    target_length = max_num_tokens
    if rng.random() < short_seq_prob:
        target_length = rng.randint(2, max_num_tokens)

    chunk_start = 0
    while chunk_start < num_sentences:
        # The chunk ends at the first sentence that takes it to the target, or the last one.
        last = bisect.bisect_left(bounds, bounds[chunk_start] + target_length, chunk_start + 1) - 1
        last = min(last, num_sentences - 1)
        chunk_sentences = last - chunk_start + 1
        a_end = chunk_start + (rng.randint(1, chunk_sentences - 1) if chunk_sentences >= 2 else 1)
        tokens_a = tokens[bounds[chunk_start]:bounds[a_end]]
        if chunk_sentences == 1 or (random_next_sentence and rng.random() < 0.5):
            kind = RANDOM_DOCUMENT
            other = documents[_random_other_document(len(documents), document_index, rng)]
            tokens_b = _random_segment(other, target_length - len(tokens_a), rng)
            last = a_end - 1  # The chunk's unused sentences go back for the next chunk.
        elif not random_next_sentence and rng.random() < 0.5:
            kind = SWAPPED
            tokens_a, tokens_b = tokens[bounds[a_end]:bounds[last + 1]], tokens_a
        else:
            kind = IN_ORDER
            tokens_b = tokens[bounds[a_end]:bounds[last + 1]]
        (front_a, back_a), (front_b, back_b) = truncation_counts(
            len(tokens_a), len(tokens_b), max_num_tokens, rng)
        yield _trimmed(tokens_a, front_a, back_a), _trimmed(tokens_b, front_b, back_b), kind
        chunk_start = last + 1
