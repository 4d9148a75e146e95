"""Raw text lines to token ids, exactly as the original's per-line tokenization, in batches.

The original ran `preprocess_text` then `FullTokenizer.tokenize` and `convert_tokens_to_ids` on
every line; that per-piece Python is most of the tokenization time. Here, on the
SentencePiece path, a batch of lines is encoded to ids in one sentencepiece call, and only the
lines where the batch result could differ from the original fall back to the original
functions: lines with an unknown piece (its surface text decides the word-start rule, see
`vocabulary`) or with a piece ending in "," (the digit-comma rule of `encode_pieces`).
Every other line is identical by construction: `EncodeAsIds` and `EncodeAsPieces` make the same
segmentation and `PieceToId` maps a known piece to its id.
"""

from albert_tf.text import tokenization
from albert_tf.pretraining import vocabulary as vocabulary_lib


def _collapse_ascii(line, lower):
    """`preprocess_text` for ASCII text, where NFKD and dropping combining marks change nothing."""
    text = " ".join(line.split())
    return text.lower() if lower else text


class LineEncoder:
    """Encodes lines of text; `None` marks a line that is empty after preprocessing (the
    original's document boundary), `[]` a non-empty line without tokens (ignored)."""

    def __init__(self, vocab, do_lower_case):
        self.vocab = vocab
        self.do_lower_case = do_lower_case
        tokenizer = vocab.tokenizer
        if vocab.is_sentencepiece:
            self._recheck_ids = frozenset(
                [vocab.unk_id] + [token_id for piece, token_id in tokenizer.vocab.items()
                                  if len(piece) > 1 and piece.endswith(",")])

    def encode(self, lines):
        """Token ids for each line in `lines` (str, newline already removed)."""
        if self.vocab.is_sentencepiece:
            return self._encode_sentencepiece(lines)
        return [self._encode_wordpiece(line) for line in lines]

    def _preprocess(self, line):
        if line.isascii():
            return _collapse_ascii(line, self.do_lower_case)
        return tokenization.preprocess_text(line, lower=self.do_lower_case)

    def _encode_sentencepiece(self, lines):
        texts = [self._preprocess(line) for line in lines]
        non_empty = [text for text in texts if text]
        # One thread: the worker processes are the parallelism.
        batch = iter(self.vocab.tokenizer.sp_model.encode(non_empty, out_type=int, num_threads=1))
        recheck = self._recheck_ids
        encoded = []
        for text in texts:
            if not text:
                encoded.append(None)
                continue
            ids = next(batch)
            if not recheck.isdisjoint(ids):
                ids = self._encode_sentencepiece_exactly(text)
            encoded.append(ids)
        return encoded

    def _encode_sentencepiece_exactly(self, text):
        """The original path, piece by piece, for the few lines the batch cannot decide."""
        tokenizer = self.vocab.tokenizer
        pieces = tokenizer.tokenize(text)
        ids = tokenizer.convert_tokens_to_ids(pieces)
        unk_id = self.vocab.unk_id
        return [self.vocab.unknown_continuation_id
                if token_id == unk_id and not vocabulary_lib.is_start_piece_sp(piece)
                else token_id
                for piece, token_id in zip(pieces, ids)]

    def _encode_wordpiece(self, line):
        text = tokenization.convert_to_unicode(line).strip()
        if not text:
            return None
        tokenizer = self.vocab.tokenizer
        return tokenizer.convert_tokens_to_ids(tokenizer.tokenize(text))
