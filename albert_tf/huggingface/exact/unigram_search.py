"""SentencePiece's own Unigram search (its `EncodeOptimized`, the default encoder of
sentencepiece 0.2), in float32 as SentencePiece computes it. Needs only the standard library.

Why not the `tokenizers` Unigram model: both keep, for every position, the best path ending
there, trying pieces by start then by length and replacing a path only by a strictly better one,
but `tokenizers` adds the scores in float64 and SentencePiece in float32. Two segmentations with
the same pieces in another order ("1", "11" and "11", "1") have equal float64 sums, so
`tokenizers` keeps the first; in float32 each sum is rounded after every piece, the rounding
depends on the score accumulated since the start of the line, and SentencePiece keeps whichever
rounded higher: `1,111` is `▁1`, `,`, `11`, `1` there and `▁1`, `,`, `1`, `11` in `tokenizers`.
"""

import json
import struct

_FLT_MIN = struct.unpack("<f", struct.pack("<I", 0x00800000))[0]
_FLT_MAX = struct.unpack("<f", struct.pack("<I", 0x7F7FFFFF))[0]
_UNK_PENALTY = 10.0


_FLOAT = struct.Struct("<f")


def _f32(value):
    """`value` rounded to the nearest float32 (a C `float` assignment)."""
    return _FLOAT.unpack(_FLOAT.pack(value))[0]


class UnigramSearch:
    """The best segmentation of a normalised text, as SentencePiece finds it.

    `pieces` are (piece, score) in id order; `user_defined` and `unmatched` name the
    user-defined pieces and those the search never matches in text (control pieces, <unk>)."""

    def __init__(self, pieces, user_defined, unmatched):
        user_defined, unmatched = frozenset(user_defined), frozenset(unmatched)
        normal = [_f32(score) for piece, score in pieces
                  if piece not in user_defined and piece not in unmatched]
        max_score = max([_FLT_MIN] + normal)
        self._unk_score = _f32(min([_FLT_MAX] + normal) - _UNK_PENALTY)
        # SentencePiece scores a user-defined piece of n UTF-8 bytes as float(n * max score) - 0.1,
        # a double; its search takes every piece's score as that expression's type, double.
        self._pieces = {}
        for piece, score in pieces:
            if piece in user_defined:
                self._pieces[piece] = _f32(len(piece.encode("utf-8")) * max_score) - 0.1
            elif piece not in unmatched:
                self._pieces[piece] = _f32(score)
        # Every proper prefix of a piece: the search stops extending a match at any other text.
        self._prefixes = {piece[:end] for piece in self._pieces for end in range(1, len(piece))}

    @classmethod
    def of(cls, tokenizer, user_defined, unmatched):
        """The search over the pieces and scores of `tokenizer` (a `tokenizers.Tokenizer` from
        export_to_hf.py's tokenizer.json, whose model is a Unigram over the SentencePiece
        model's pieces in id order)."""
        model = json.loads(tokenizer.to_str())["model"]
        if model["type"] != "Unigram":
            raise ValueError(f"tokenizer.json has a {model['type']} model, not the Unigram "
                             "model export_to_hf.py writes")
        return cls(model["vocab"], user_defined, unmatched)

    def segment(self, text):
        """[(start, end, known)] character spans of `text`'s pieces; a run of characters no
        piece covers is one unknown span, as SentencePiece merges them."""
        size = len(text)
        score = [0.0] + [None] * size  # best path score ending at each position (float32)
        start_of = [None] * (size + 1)
        known_at = [False] * (size + 1)
        for start in range(size):  # every position is reached: an unknown span if nothing else
            here, single = score[start], False
            for end in range(start + 1, size + 1):
                match = text[start:end]
                piece_score = self._pieces.get(match)
                if piece_score is None:
                    if match in self._prefixes:
                        continue
                    break
                # A double sum compared with the float best so far, then stored as a float.
                candidate = piece_score + here
                if start_of[end] is None or candidate > score[end]:
                    score[end], start_of[end], known_at[end] = _f32(candidate), start, True
                single = single or end == start + 1
            if not single:  # the unknown piece's score is a float: a float sum
                candidate = _f32(self._unk_score + here)
                if start_of[start + 1] is None or candidate > score[start + 1]:
                    score[start + 1], start_of[start + 1] = candidate, start
                    known_at[start + 1] = False
        spans, end = [], size
        while end > 0:
            start = start_of[end]
            if spans and not known_at[end] and not spans[-1][2]:
                spans[-1] = (start, spans[-1][1], False)
            else:
                spans.append((start, end, known_at[end]))
            end = start
        return spans[::-1]
