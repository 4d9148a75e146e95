"""`AlbertMaskedLMPreprocessor`: raw strings holding the literal `[MASK]` -> the encoder's ids
and the positions of the masks.

ALBERT's SentencePiece models (the released `30k-clean.model`, `build_vocab.py`'s) have `[MASK]`
as a control piece, which SentencePiece never matches in raw text: alone, "the [MASK] sat" would
be "▁the", "▁", "[", "mask", "]"... So the text is cut at every literal "[MASK]" (case matters:
"[mask]" is text), each part is tokenized on its own by the scripts' tokenizer (stripped,
lower-cased if so set, with its own leading "▁") and the mask id goes between the parts. The
spaces around a mask therefore change nothing ("the[MASK]sat" = "the [MASK] sat" = "▁the",
[MASK], "▁sat"), which is what Hugging Face's sentencepiece `AlbertTokenizer` gives: its mask
token takes the space on its left and each part between special tokens is stripped and
tokenized alone. The sequence is `[CLS] text [SEP]`, truncated and cut to a length bucket as
the classifier's preprocessor does.
"""

import tensorflow as tf

from albert_tf.keras_tasks import preprocessor as preprocessor_lib
from albert_tf.text import tf_tokenization, tokenization

MASK_TOKEN = "[MASK]"


class AlbertMaskedLMPreprocessor(preprocessor_lib.AlbertTextClassifierPreprocessor):
    """`preprocessor(texts)` -> {input_ids, input_mask, segment_ids, masked_lm_positions}: the
    ids int32 [B, L] as `AlbertTextClassifierPreprocessor` packs one text, and the index of
    every mask id in its row, int32 [B, M] (M the most masks of a row; shorter rows padded
    with 0)."""

    def __init__(self, spm_model_file, max_seq_length=128, do_lower_case=True, **kwargs):
        super().__init__(spm_model_file, max_seq_length, do_lower_case, **kwargs)
        sp_model = tokenization.load_sp_model(spm_model_file)
        self.pieces = [sp_model.IdToPiece(index) for index in range(sp_model.GetPieceSize())]

    @property
    def mask_id(self):
        return self.tokenizer.mask_id

    def tokenize_masked(self, texts):
        """[B] strings -> RaggedTensor [B, (tokens)] int32 ids, `[MASK]` as the mask id."""
        parts = tf.strings.split(tf.convert_to_tensor(texts, tf.string), sep=MASK_TOKEN)
        ids = self.tokenizer.tokenize(parts.flat_values)
        masks = tf.RaggedTensor.from_tensor(tf.fill([ids.nrows(), 1], self.mask_id))
        each_part_then_a_mask = tf.concat([ids, tf.cast(masks, ids.dtype)], axis=1)
        per_text = tf.RaggedTensor.from_row_splits(each_part_then_a_mask, parts.row_splits)
        return per_text.merge_dims(1, 2)[:, :-1]  # no mask after the last part

    def pad(self, inputs):
        """The ids of a batch of texts padded to max_seq_length, with the mask positions."""
        packed = tf_tokenization.pack_inputs([self.tokenize_masked(inputs)],
                                             self.max_seq_length, self.tokenizer.cls_id,
                                             self.tokenizer.sep_id)
        features = {name: tf.cast(packed[name], tf.int32)
                    for name in preprocessor_lib.MODEL_INPUTS}
        features["masked_lm_positions"] = self.mask_positions(features["input_ids"])
        return features

    def mask_positions(self, input_ids):
        """int32 [B, M]: where the mask id is in each row of `input_ids`, 0-padded."""
        input_ids = tf.convert_to_tensor(input_ids, tf.int32)
        positions = tf.broadcast_to(tf.range(tf.shape(input_ids)[1]), tf.shape(input_ids))
        return tf.ragged.boolean_mask(positions, input_ids == self.mask_id).to_tensor(0)
