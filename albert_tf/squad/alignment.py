"""Aligns SentencePiece pieces of a paragraph with the paragraph's original characters.

Pieces are made from `preprocess_text(paragraph)`, which collapses spaces, strips accents and
may lowercase, so piece offsets are not offsets into the original text. As the original does,
the pieces are joined ("▁" → space) into `tok_cat_text` and matched against the original
characters (each passed through `preprocess_text(..., remove_space=False)`) with a longest
common subsequence restricted to a band around the diagonal: band |n−m|+5, doubled once if
fewer than 80% of the characters matched. Characters left unmatched take the nearest matched
neighbour (`_convert_index`). If the match still covers < 80% of the paragraph, the paragraph
is a MISMATCH and its questions are skipped.
"""

import dataclasses

from albert_tf.text import tokenization

_UNSET, _FROM_UP, _FROM_LEFT, _MATCH = -1, 0, 1, 2


@dataclasses.dataclass
class Alignment:
    """Per piece: first and last original character; and the char maps used for answers."""

    pieces: list
    tok_start_to_orig_index: list
    tok_end_to_orig_index: list
    orig_to_chartok_index: list
    chartok_to_tok_index: list

    def answer_piece_span(self, start_char, end_char):
        """The (first, last) piece covering original characters start_char..end_char."""
        start = _convert_index(self.orig_to_chartok_index, start_char, is_start=True)
        end = _convert_index(self.orig_to_chartok_index, end_char, is_start=False)
        return self.chartok_to_tok_index[start], self.chartok_to_tok_index[end]


def _banded_lcs(orig_chars, tok_cat_text, max_dist):
    """Returns (length of the full match, back-pointers by row and band offset).

    Cell (i, j) exists only for i − max_dist ≤ j < i + max_dist (the original's asymmetric
    band); cells outside it count as 0.
    """
    n, m = len(orig_chars), len(tok_cat_text)
    width = 2 * max_dist
    zeros = [0] * (width + 1)  # One spare cell so k + 1 past the band reads 0.
    previous, back = zeros, []
    for i in range(n):
        current, pointers = [0] * (width + 1), [_UNSET] * width
        for j in range(max(0, i - max_dist), min(m, i + max_dist)):
            k = j - i + max_dist
            best, step = 0, _UNSET
            if i > 0:
                best, step = previous[k + 1], _FROM_UP
            if j > 0 and k > 0 and current[k - 1] > best:
                best, step = current[k - 1], _FROM_LEFT
            diagonal = previous[k] if i > 0 and j > 0 else 0
            if orig_chars[i] == tok_cat_text[j] and diagonal + 1 > best:
                best, step = diagonal + 1, _MATCH
            current[k], pointers[k] = best, step
        previous = current
        back.append(pointers)
    k = (m - 1) - (n - 1) + max_dist
    return (previous[k] if 0 <= k < width else 0), back


def _convert_index(index, pos, m=None, is_start=True):
    """Maps `pos` through `index`, filling an unaligned (None) position from its neighbours.

    A start moves right of the previous aligned position, an end left of the next one, so a
    span never grows past the characters between its aligned neighbours.
    """
    if index[pos] is not None:
        return index[pos]
    n = len(index)
    rear = pos
    while rear < n - 1 and index[rear] is None:
        rear += 1
    front = pos
    while front > 0 and index[front] is None:
        front -= 1
    if index[front] is None:
        if index[rear] >= 1:
            return 0 if is_start else index[rear] - 1
        return index[rear]
    if index[rear] is None:
        if m is not None and index[front] < m - 1:
            return index[front] + 1 if is_start else m - 1
        return index[front]
    if index[rear] > index[front] + 1:
        return index[front] + 1 if is_start else index[rear] - 1
    return index[rear] if is_start else index[front]


def align_pieces(paragraph_text, pieces, do_lower_case):
    """Returns an `Alignment` of `pieces` (of the preprocessed paragraph), or None on MISMATCH."""
    chartok_to_tok_index, tok_start_to_chartok, tok_end_to_chartok = [], [], []
    char_count = 0
    for i, piece in enumerate(pieces):
        text = piece.replace(tokenization.SPIECE_UNDERLINE, " ")
        chartok_to_tok_index.extend([i] * len(text))
        tok_start_to_chartok.append(char_count)
        char_count += len(text)
        tok_end_to_chartok.append(char_count - 1)
    tok_cat_text = "".join(pieces).replace(tokenization.SPIECE_UNDERLINE, " ")
    orig_chars = [tokenization.preprocess_text(c, lower=do_lower_case, remove_space=False)
                  for c in paragraph_text]
    n, m = len(orig_chars), len(tok_cat_text)
    if n == 0 or m == 0:
        return None

    max_dist = abs(n - m) + 5
    matched, back = _banded_lcs(orig_chars, tok_cat_text, max_dist)
    if not matched > 0.8 * n:
        max_dist *= 2
        matched, back = _banded_lcs(orig_chars, tok_cat_text, max_dist)
    if matched < 0.8 * n:
        return None

    orig_to_chartok = [None] * n
    chartok_to_orig = [None] * m
    i, j = n - 1, m - 1
    while i >= 0 and j >= 0:
        k = j - i + max_dist
        step = back[i][k] if 0 <= k < 2 * max_dist else _UNSET
        if step == _UNSET:
            break
        if step == _MATCH:
            orig_to_chartok[i], chartok_to_orig[j] = j, i
            i, j = i - 1, j - 1
        elif step == _FROM_LEFT:
            j -= 1
        else:
            i -= 1
    if all(v is None for v in orig_to_chartok):
        return None

    return Alignment(
        pieces=list(pieces),
        tok_start_to_orig_index=[_convert_index(chartok_to_orig, p, n, is_start=True)
                                 for p in tok_start_to_chartok],
        tok_end_to_orig_index=[_convert_index(chartok_to_orig, p, n, is_start=False)
                               for p in tok_end_to_chartok],
        orig_to_chartok_index=orig_to_chartok,
        chartok_to_tok_index=chartok_to_tok_index)
