"""A SentencePiece model rebuilt from a `tokenizers` Unigram tokenizer.json (what a folder
saved by transformers 5 carries instead of spiece.model), so that the scripts'
--spm_model_file reads it.

Taken over: the pieces and scores in id order (float32, SentencePiece's own precision; a score
that rounds is counted), the unknown piece, the special tokens (as CONTROL pieces: never read
from text) and other added tokens (USER_DEFINED), the precompiled normaliser (`Precompiled`,
SentencePiece's own charsmap) and the dummy prefix (`Metaspace`). The scripts' preprocessing
(`tokenization.preprocess_text`: whitespace collapsed, NFKD, accents dropped, lowercasing with
--do_lower_case) stands for tokenizer.json's NFKD, StripAccents and Lowercase steps.

Refused, with the reason: a model other than Unigram, byte fallback, normaliser or
pre-tokenizer steps that neither SentencePiece nor the preprocessing performs, and a
tokenizer.json that keeps accents (the preprocessing always drops them).
Refused too: added tokens that split the text under a Metaspace prepending "▁" to every
segment (prepend_scheme always), which SentencePiece cannot do after a user-defined piece.
Left as a named difference: tokenizer.json's replacement of `` and '' by ", which the
original's preprocessing does not do (nor does the rebuilt model); the import counts the
lines of a sample on which the ids differ.
"""

import base64
import json

import numpy as np
from sentencepiece import sentencepiece_model_pb2

from albert_tf.huggingface import hf_format

QUOTES = {"``", "''"}
_PIECE = sentencepiece_model_pb2.ModelProto.SentencePiece


def _steps(component):
    """A normaliser or pre-tokenizer as a flat list of its steps."""
    if not component:
        return []
    if component["type"] == "Sequence":
        key = "normalizers" if "normalizers" in component else "pretokenizers"
        return [step for part in component[key] for step in _steps(part)]
    return [component]


def _normaliser(normalizer, source):
    """(do_lower_case, precompiled charsmap bytes or None, replaces quotes)."""
    lower, strip_accents, nfkd, charsmap, quotes = False, False, False, None, False
    for step in _steps(normalizer):
        kind = step["type"]
        pattern = step.get("pattern", {})
        if kind == "Lowercase":
            lower = True
        elif kind == "StripAccents":
            strip_accents = True
        elif kind == "NFKD":
            nfkd = True
        elif kind == "Precompiled":
            charsmap = base64.b64decode(step["precompiled_charsmap"]) if step[
                "precompiled_charsmap"] else None
        elif kind == "Replace" and pattern.get("String") in QUOTES and step["content"] == '"':
            quotes = True
        elif kind == "Replace" and pattern.get("Regex") == " {2,}" and step["content"] == " ":
            pass  # runs of spaces collapsed: the preprocessing does it too
        elif kind == "Strip":
            pass  # ends stripped: the preprocessing does it too
        else:
            raise hf_format.HFFormatError(
                f"{source}: normalizer step {kind} {json.dumps(step)[:120]} has no SentencePiece "
                f"or preprocessing counterpart: its vocabulary cannot be expressed as a "
                f"SentencePiece model the scripts read")
    if not (nfkd and strip_accents):
        raise hf_format.HFFormatError(
            f"{source}: the normalizer keeps accents (no NFKD and StripAccents steps); the "
            f"scripts' preprocessing always drops them, so the ids would differ")
    return lower, charsmap, quotes


def _dummy_prefix(pre_tokenizer, source):
    """(whether the Metaspace pre-tokenizer prepends "▁", SentencePiece's add_dummy_prefix;
    its prepend_scheme)."""
    prefix = None
    for step in _steps(pre_tokenizer):
        if step["type"] == "WhitespaceSplit":
            continue
        if step["type"] != "Metaspace" or step.get("replacement") != "▁" or not step.get(
                "split", True):
            raise hf_format.HFFormatError(
                f"{source}: pre_tokenizer step {json.dumps(step)[:120]}: expected Metaspace "
                f"(replacement ▁, split) and WhitespaceSplit only, as SentencePiece splits")
        scheme = step.get("prepend_scheme", "always" if step.get("add_prefix_space", True)
                          else "never")
        prefix = scheme
    if prefix is None:
        raise hf_format.HFFormatError(f"{source}: no Metaspace pre-tokenizer: not a "
                                      f"SentencePiece-style tokenizer")
    return prefix != "never", prefix


def build(tokenizer_json):
    """(serialized ModelProto, do_lower_case, notes: [str]) from the tokenizer.json at the path."""
    with open(tokenizer_json, encoding="utf-8") as reader:
        data = json.load(reader)
    model = data.get("model") or {}
    if model.get("type") != "Unigram":
        raise hf_format.HFFormatError(
            f"{tokenizer_json}: a {model.get('type')} model: only a Unigram vocabulary (an "
            f"ALBERT's) can be expressed as a SentencePiece unigram model")
    if model.get("byte_fallback"):
        raise hf_format.HFFormatError(f"{tokenizer_json}: byte_fallback is on; the scripts' "
                                      f"SentencePiece models have no byte pieces")
    lower, charsmap, quotes = _normaliser(data.get("normalizer"), tokenizer_json)
    prefix, scheme = _dummy_prefix(data.get("pre_tokenizer"), tokenizer_json)
    splitting = sorted(token["content"] for token in data.get("added_tokens", [])
                       if not token.get("special"))
    if splitting and scheme == "always":
        raise hf_format.HFFormatError(
            f"{tokenizer_json}: its added tokens {splitting[:8]} split the text, and its "
            f"Metaspace (prepend_scheme always) prefixes ▁ to the text after each; "
            f"SentencePiece's user-defined pieces do not, so the ids would differ on every "
            f"line with one: this vocabulary cannot be expressed as a SentencePiece model")
    unk_id = model.get("unk_id")
    if unk_id is None:
        raise hf_format.HFFormatError(f"{tokenizer_json}: the Unigram model has no unk_id; "
                                      f"SentencePiece needs an unknown piece")
    added = {token["id"]: token for token in data.get("added_tokens", [])}
    proto = sentencepiece_model_pb2.ModelProto()
    rounded = 0
    for index, (piece, score) in enumerate(model["vocab"]):
        entry = proto.pieces.add(piece=piece, score=score)
        rounded += float(np.float32(score)) != score
        if index == unk_id:
            entry.type = _PIECE.UNKNOWN
        elif index in added:
            entry.type = _PIECE.CONTROL if added[index].get("special") else _PIECE.USER_DEFINED
    trainer = proto.trainer_spec
    trainer.model_type = sentencepiece_model_pb2.TrainerSpec.UNIGRAM
    trainer.vocab_size = len(model["vocab"])
    trainer.unk_id = unk_id
    trainer.unk_piece = model["vocab"][unk_id][0]
    pads = [index for index, token in added.items() if token["content"] == "<pad>"]
    trainer.pad_id, trainer.bos_id, trainer.eos_id = (pads[0] if pads else -1), -1, -1
    normalizer = proto.normalizer_spec
    normalizer.name = "nmt_nfkc" if charsmap else "identity"
    if charsmap:
        normalizer.precompiled_charsmap = charsmap
    normalizer.add_dummy_prefix = prefix
    normalizer.remove_extra_whitespaces = True
    normalizer.escape_whitespaces = True
    notes = []
    if quotes:
        notes.append("tokenizer.json replaces `` and '' by \" before tokenizing; the original's "
                     "preprocessing and the rebuilt model do not (lines with them differ)")
    if rounded:
        notes.append(f"{rounded} scores are not float32 numbers and were rounded to float32 "
                     f"(SentencePiece's precision)")
    return proto.SerializeToString(), lower, notes
