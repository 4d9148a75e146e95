"""Whole-word n-gram masking (the original `create_masked_lm_predictions`).

For a sequence `[CLS] A [SEP] B [SEP]` of ids:
* Candidates: with whole-word masking, a piece that is not a word start joins the previous
  candidate (so, as in the original, a non-start first piece of B joins A's last word across
  the [SEP]); otherwise every piece is a candidate. [CLS]/[SEP] never are.
* token_boundary: 1 for [CLS]/[SEP] and word-start pieces, 0 otherwise.
* Budget: min(max_predictions_per_seq, max(1, round(len(tokens) * masked_lm_prob))) with
  Python's round (halves to even); masked_lm_prob == 0 gives no predictions.
* Candidates are visited in random order. For each, an n-gram length n in 1..ngram is drawn
  with p(n) proportional to 1/n (reversed with favor_shorter_ngram=False); the n words from it
  fall back to n-1, ... words while they exceed the remaining budget; skipped if even one word
  does not fit or any position is already masked. Each masked position becomes [MASK] with
  p 0.8, else stays with p 0.5, else becomes a uniformly random vocabulary id.
* do_permutation: a second pass picks further positions the same way; their tokens are
  permuted among themselves and they are predicted too.

Every random choice comes from the `random.Random` passed in; the original drew n from numpy's
unseeded global generator, so its output was not reproducible. The visiting order is
drawn lazily (a Fisher-Yates shuffle that stops when the budget is spent), which is the same
uniformly random order without shuffling all ~400 candidates of a 512-token sequence.
"""

import bisect
import dataclasses

import numpy as np


@dataclasses.dataclass
class MaskingStats:
    """Counters for the run summary and the statistical tests."""
    sampled_ngrams: list        # sampled_ngrams[n]: how often n was drawn
    masked_ngrams: list         # masked_ngrams[n]: n-grams (after fall-back) actually masked
    replaced_by_mask: int = 0
    kept: int = 0
    replaced_by_random: int = 0
    permuted: int = 0


class MaskedSequence:
    """`tokens` and `token_boundary` are numpy arrays (int32, uint8), positions/labels lists."""

    __slots__ = ("tokens", "positions", "labels", "token_boundary")

    def __init__(self, tokens, positions, labels, token_boundary):
        self.tokens = tokens
        self.positions = positions
        self.labels = labels
        self.token_boundary = token_boundary


def ngram_cumulative_probabilities(ngram, favor_shorter_ngram):
    """Cumulative p(1..ngram-1): p(n) ∝ 1/n, reversed unless favor_shorter_ngram."""
    weights = [1.0 / n for n in range(1, ngram + 1)]
    if not favor_shorter_ngram:
        weights.reverse()
    total = sum(weights)
    cumulative = []
    running = 0.0
    for weight in weights[:-1]:
        running += weight / total
        cumulative.append(running)
    return cumulative


def masking_budget(num_tokens, masked_lm_prob, max_predictions_per_seq):
    """The number of predictions the original aims for in a sequence of `num_tokens` ids."""
    return min(max_predictions_per_seq, max(1, int(round(num_tokens * masked_lm_prob))))


class Masker:
    """Masks sequences for one vocabulary and one set of masking flags."""

    def __init__(self, vocab, masked_lm_prob, max_predictions_per_seq, ngram=3,
                 favor_shorter_ngram=True, do_whole_word_mask=True, do_permutation=False):
        self.start_flags = np.frombuffer(vocab.start_flags, dtype=np.uint8)
        self.mask_id = vocab.mask_id
        self.replacement_ids = vocab.replacement_ids
        self.masked_lm_prob = masked_lm_prob
        self.max_predictions_per_seq = max_predictions_per_seq
        self.ngram = ngram
        self.do_whole_word_mask = do_whole_word_mask
        self.do_permutation = do_permutation
        self._cumulative = ngram_cumulative_probabilities(ngram, favor_shorter_ngram)
        self.stats = MaskingStats([0] * (ngram + 1), [0] * (ngram + 1))

    def _word_starts(self, token_boundary, sep_position, last_position):
        """Positions where a candidate begins, then the end sentinel (the last [SEP])."""
        if not self.do_whole_word_mask:
            return list(range(1, sep_position)) + list(range(sep_position + 1, last_position + 1))
        starts = np.flatnonzero(token_boundary).tolist()
        # Drop [CLS] and [SEP] (they are flagged but never candidates), keep the last [SEP] as
        # the sentinel; the first piece after [CLS] starts a candidate whatever it is.
        del starts[bisect.bisect_left(starts, sep_position)]
        if starts[1] != 1:
            starts[0] = 1
        else:
            del starts[0]
        return starts

    def mask(self, tokens, sep_position, rng):
        """Masks `tokens` ([CLS] A [SEP] B [SEP], ids; [SEP] of A at `sep_position`)."""
        tokens = np.asarray(tokens, dtype=np.int32)
        num_tokens = len(tokens)
        token_boundary = self.start_flags[tokens]  # One table lookup for the whole sequence.
        token_boundary[0] = token_boundary[sep_position] = token_boundary[-1] = 1
        output = tokens.copy()
        if self.masked_lm_prob == 0:
            return MaskedSequence(output, [], [], token_boundary)
        budget = masking_budget(num_tokens, self.masked_lm_prob, self.max_predictions_per_seq)
        starts = self._word_starts(token_boundary, sep_position, num_tokens - 1)
        covered = bytearray(num_tokens)
        masked = self._choose(starts, sep_position, covered, budget, rng)
        stats = self.stats
        mask_id = self.mask_id
        replacement_ids = self.replacement_ids
        originals = tokens[masked].tolist()
        predictions = list(zip(masked, originals))
        for position in masked:
            if rng.random() < 0.8:
                output[position] = mask_id
                stats.replaced_by_mask += 1
            elif rng.random() < 0.5:
                stats.kept += 1
            else:
                output[position] = replacement_ids[rng.randrange(len(replacement_ids))]
                stats.replaced_by_random += 1
        if self.do_permutation:
            selected = sorted(self._choose(starts, sep_position, covered, budget, rng))
            permuted = list(selected)
            rng.shuffle(permuted)
            before = output.copy()
            output[selected] = before[permuted]
            predictions.extend(zip(selected, tokens[selected].tolist()))
            stats.permuted += len(selected)
        predictions.sort()
        return MaskedSequence(output, [p for p, _ in predictions], [t for _, t in predictions],
                              token_boundary)

    def _choose(self, starts, sep_position, covered, budget, rng):
        """One n-gram pass: the positions it masks, in the order chosen; marks them covered."""
        num_candidates = len(starts) - 1
        order = list(range(num_candidates))
        cumulative = self._cumulative
        stats = self.stats
        chosen = []
        random = rng.random
        for k in range(num_candidates):
            room = budget - len(chosen)
            if room <= 0:
                break
            # Uniform in [k, num_candidates): int(random() * m) is biased by < m / 2**53 and
            # five times faster than randrange, which matters at ~15 draws per sequence.
            j = k + int(random() * (num_candidates - k))
            order[k], order[j] = order[j], order[k]
            first = order[k]
            n = bisect.bisect_right(cumulative, random()) + 1
            stats.sampled_ngrams[n] += 1
            for words in range(n, 0, -1):
                low = starts[first]
                high = starts[min(first + words, num_candidates)]
                if high - low - (low < sep_position < high) <= room:
                    break
            else:
                continue  # Not even one word fits the remaining budget.
            if covered.find(1, low, high) != -1:
                continue
            stats.masked_ngrams[words] += 1
            for position in range(low, high):
                if position != sep_position:
                    covered[position] = 1
                    chosen.append(position)
        return chosen
