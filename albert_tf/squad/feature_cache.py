"""Optional on-disk caches of SQuAD features: a TFRecord plus a JSON side file, never a pickle.

The original required `--train_feature_file`, `--predict_feature_file` and a pickled
`--predict_feature_left_file`, and reused them whenever they existed. Here each is optional and
its file name carries a key made of every input it depends on: max_seq_length, doc_stride,
max_query_length, lower-casing, train/predict, and a hash of the SQuAD file and the
SentencePiece model. A changed flag or file gives a new name, so a stale cache is never read.
The JSON side file holds the post-processing metadata of each window (index maps, max-context
positions) and the full key; it is written last, so a cache without it is incomplete and
gets rebuilt. Both files are written to temporary names and renamed when complete.
"""

import hashlib
import json
import os

import tensorflow as tf

from albert_tf import errors
from albert_tf.files import feature_records, io_utils
from albert_tf.squad import features as features_lib
from albert_tf.squad import records

FORMAT_VERSION = 1


def cache_key(input_file, spm_model_file, max_seq_length, doc_stride, max_query_length,
              do_lower_case, is_training):
    """The string that names a cache: readable flags plus a hash of everything it depends on."""
    inputs = {"format": FORMAT_VERSION, "data": feature_records.file_fingerprint(input_file),
              "spm": feature_records.file_fingerprint(spm_model_file)}
    digest = hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()[:12]
    split = "train" if is_training else "predict"
    case = "uncased" if do_lower_case else "cased"
    return (f"squad-{split}-seq{max_seq_length}-stride{doc_stride}-query{max_query_length}"
            f"-{case}-{digest}")


def cache_paths(record_file, side_file, key):
    """(TFRecord path, JSON path) derived from the flags: `<stem>.<key><suffix>`.

    Without a side-file flag the JSON sits beside the TFRecord.
    """
    record_path = feature_records.keyed_path(record_file, None, key)
    side_stem = (os.path.splitext(side_file)[0] if side_file
                 else record_path[:record_path.rindex(f".{key}")])
    return record_path, f"{side_stem}.{key}.json"


def _feature_metadata(feature):
    return {
        "unique_id": feature.unique_id, "example_index": feature.example_index,
        "doc_span_index": feature.doc_span_index, "doc_offset": feature.doc_offset,
        "tok_start_to_orig_index": feature.tok_start_to_orig_index,
        "tok_end_to_orig_index": feature.tok_end_to_orig_index,
        "max_context_positions": sorted(p for p, v in feature.token_is_max_context.items() if v),
        "other_positions": sorted(p for p, v in feature.token_is_max_context.items() if not v),
    }


def _metadata_to_feature(entry):
    is_max = {p: True for p in entry["max_context_positions"]}
    is_max.update({p: False for p in entry["other_positions"]})
    return features_lib.InputFeatures(
        unique_id=entry["unique_id"], example_index=entry["example_index"],
        doc_span_index=entry["doc_span_index"], doc_offset=entry["doc_offset"],
        tok_start_to_orig_index=entry["tok_start_to_orig_index"],
        tok_end_to_orig_index=entry["tok_end_to_orig_index"], token_is_max_context=is_max,
        input_ids=None, input_mask=None, segment_ids=None, p_mask=None)


def write(features, key, record_path, side_path, is_training):
    """Writes the TFRecord, then the side file (the side file marks the cache complete)."""
    feature_records.write_records((records.serialize(feature, is_training)
                                   for feature in features), record_path)
    side = {"key": key, "num_features": len(features)}
    if not is_training:
        side["features"] = [_feature_metadata(f) for f in features]
    io_utils.atomic_write_text(side_path, json.dumps(side))


def read(key, record_path, side_path):
    """(num_features, metadata-only InputFeatures or []) of a complete cache, or None if absent.

    A side file whose key differs from `key` is an error (it was renamed by hand).
    """
    if not (tf.io.gfile.exists(side_path) and tf.io.gfile.exists(record_path)):
        return None
    with tf.io.gfile.GFile(side_path, "r") as reader:
        side = json.load(reader)
    if side.get("key") != key:
        raise errors.UserInputError(f"{side_path}: feature cache built for {side.get('key')!r}, "
                         f"expected {key!r}; delete it or choose another path")
    return side["num_features"], [_metadata_to_feature(e) for e in side.get("features", [])]
