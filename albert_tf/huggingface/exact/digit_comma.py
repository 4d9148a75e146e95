"""The original ALBERT's digit-comma rule, exactly, on a `tokenizers.Tokenizer` loaded from the
tokenizer.json that export_to_hf.py writes. Needs only `tokenizers`.

The original (`encode_pieces`) rewrites a piece such as "6," or "▁16," where SentencePiece's
search *chose* it: the piece without its comma and "▁"s is encoded again (SentencePiece gives it
a "▁" prefix) and "," follows. tokenizer.json cannot say that: its Unigram model emits the pieces
it matched and no later stage rewrites them, so the file rewrites such a piece wherever it
occurs in the text, which differs where the search would have chosen other pieces ("16,000" is
"▁16", ",000"). Here a Python pre-tokenizer runs the same Unigram search first, and where it
chooses a learned digit-comma piece cuts the text there, the piece's digits (with the "▁" the
second encoding adds) and its comma becoming words of their own.
"""

import json

from tokenizers import Tokenizer, pre_tokenizers

SPIECE_UNDERLINE = "\u2581"
# The mark tokenizer.json's approximation of the rule for learned pieces inserts (and its
# pre-tokenizer cuts at), albert_tf.text.hf_tokenizer.LEARNED_CUT: copied, as this file is used
# alone in an exported folder.
LEARNED_CUT = "\u0346"


class DigitCommaRule:
    """A custom pre-tokenizer applying the rule for `pieces`, searching with `model`."""

    def __init__(self, model, pieces):
        self._model = model
        self._pieces = frozenset(pieces)

    def _split(self, _, word):
        text = word.normalized
        if "," not in text:
            return [word]
        parts, start, cut = [], 0, 0
        for token in self._model.tokenize(text):
            end = start + len(token.value)
            if token.value in self._pieces:
                if start > cut:
                    parts.append(word.slice((cut, start)))
                digits = word.slice((start, end - 1))
                digits.replace(SPIECE_UNDERLINE, "")
                digits.prepend(SPIECE_UNDERLINE)
                parts += [digits, word.slice((end - 1, end))]
                cut = end
            start = end
        if cut < len(text):
            parts.append(word.slice((cut, len(text))))
        return parts

    def pre_tokenize(self, pretokenized):
        pretokenized.split(self._split)


def exact_tokenizer(tokenizer, learned_pieces):
    """`tokenizer` (from export_to_hf.py's tokenizer.json) with the rule applied exactly for
    `learned_pieces`: the file's normalizer steps that rewrite those pieces wherever they occur
    (those that insert LEARNED_CUT) are removed and `DigitCommaRule` runs after the file's
    pre-tokenizer.
    The result cannot be saved as JSON (its pre-tokenizer is Python)."""
    if not learned_pieces:
        return tokenizer
    state = json.loads(tokenizer.to_str())
    steps = (state.get("normalizer") or {}).get("normalizers") or []
    kept = [step for step in steps if LEARNED_CUT not in step.get("content", "")]
    if len(kept) == len(steps):
        raise ValueError("tokenizer.json has no digit-comma step for the learned pieces "
                         f"{list(learned_pieces)[:5]}: not a file export_to_hf.py wrote for them")
    state["normalizer"]["normalizers"] = kept
    exact = Tokenizer.from_str(json.dumps(state))
    rule = pre_tokenizers.PreTokenizer.custom(DigitCommaRule(exact.model, learned_pieces))
    exact.pre_tokenizer = pre_tokenizers.Sequence([exact.pre_tokenizer, rule])
    return exact
