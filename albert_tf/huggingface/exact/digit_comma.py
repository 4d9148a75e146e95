"""The original ALBERT tokenization, exactly, on a `tokenizers.Tokenizer` loaded from the
tokenizer.json that export_to_hf.py writes. Needs only `tokenizers`.

tokenizer.json cannot be exact in two places, both fixed here by doing SentencePiece's own work
in a Python pre-tokenizer:
- the search: `tokenizers`' Unigram adds scores in float64, SentencePiece in float32, which
  decides between segmentations of equal score ("111": "11", "1" or "1", "11") by rounding that
  depends on the whole line (unigram_search.py);
- the digit-comma rule: the original (`encode_pieces`) rewrites a piece such as "6," or "▁16,"
  where SentencePiece's search *chose* it (the piece without its comma and "▁"s is encoded again,
  which gives it a "▁" prefix, and "," follows); tokenizer.json rewrites a learned one wherever
  it occurs, which differs where the search would have chosen other pieces ("16,000" is "▁16",
  ",000").
The pre-tokenizer runs the search over the whole normalised line, applies the rule to the pieces
it chose and cuts the line into exactly those pieces; a WordLevel model then gives each its id.
"""

import json

from tokenizers import Tokenizer, models, pre_tokenizers

SPIECE_UNDERLINE = "\u2581"
# The marks with which tokenizer.json's normalizer cuts the control pieces and rewrites the
# digit-comma pieces (albert_tf.text.hf_tokenizer.CUT and LEARNED_CUT; copied, as this file is
# used alone in an exported folder): the steps that insert them are the ones removed here.
CUT = "\u0345"
LEARNED_CUT = "\u0346"


def _ends_with_digit_comma(piece):
    """The original's test for a piece its rule rewrites."""
    return len(piece) > 1 and piece[-1] == "," and piece[-2].isdigit()


class OriginalPieces:
    """A custom pre-tokenizer cutting a normalised line into the original's pieces."""

    def __init__(self, search):
        self._search = search

    def _pieces(self, normalized):
        text = normalized.normalized
        return [(normalized.slice((start, end)), text[start:end])
                for start, end, _ in self._search.segment(text)]

    def _split(self, _, line):
        parts = []
        for piece, text in self._pieces(line):
            if not _ends_with_digit_comma(text):
                parts.append(piece)
                continue
            digits = piece.slice((0, len(text) - 1))
            digits.replace(SPIECE_UNDERLINE, "")
            digits.prepend(SPIECE_UNDERLINE)  # what SentencePiece adds when encoding them again
            parts += [part for part, _ in self._pieces(digits)]
            parts.append(piece.slice((len(text) - 1, len(text))))
        return parts

    def pre_tokenize(self, pretokenized):
        pretokenized.split(self._split)


def exact_tokenizer(tokenizer, search):
    """`tokenizer` (from export_to_hf.py's tokenizer.json) made exact: its normaliser without
    the steps that insert CUT or LEARNED_CUT (what remains is preprocess_text and SentencePiece's
    normaliser), `OriginalPieces` with `search` (a unigram_search.UnigramSearch of the same
    file) as pre-tokenizer and a WordLevel model over the same ids. The result cannot be saved
    as JSON (its pre-tokenizer is Python)."""
    state = json.loads(tokenizer.to_str())
    steps = state["normalizer"]["normalizers"]
    state["normalizer"]["normalizers"] = [
        step for step in steps
        if CUT not in step.get("content", "") and LEARNED_CUT not in step.get("content", "")]
    vocab = state["model"]["vocab"]
    exact = Tokenizer.from_str(json.dumps(state))
    exact.pre_tokenizer = pre_tokenizers.PreTokenizer.custom(OriginalPieces(search))
    exact.model = models.WordLevel({piece: index for index, (piece, _) in enumerate(vocab)},
                                   unk_token=vocab[state["model"]["unk_id"]][0])
    return exact
