"""The pretraining `tf.train.Example`, serialized deterministically, and TFRecord framing.

Features, dtypes and lengths are the original's:

| feature | dtype | length |
|---|---|---|
| input_ids, input_mask, segment_ids, token_boundary | int64 | max_seq_length |
| masked_lm_positions, masked_lm_ids | int64 | max_predictions_per_seq (x2 with do_permutation) |
| masked_lm_weights | float | same |
| next_sentence_labels | int64 | 1 (the SOP label) |

The bytes are exactly `tf.train.Example(...).SerializeToString(deterministic=True)` (map entries
sorted by key; protobuf's default map order differs between processes), written here with the
protobuf wire format directly: building the message through the protobuf API took ~250 µs per
512-token example, and importing TensorFlow in every worker process costs ~4 s and ~600 MB.
The tests compare these bytes with TensorFlow's serialization.
"""

import functools
import struct

from albert_tf import errors
from albert_tf.files.crc32c import masked_crc32c

# tf.train.Example wire format: Example.features = 1; Features.feature = 1 (map entries with
# key = 1, value = 2); Feature.float_list = 2, Feature.int64_list = 3; *List.value = 1, packed.
_LEN_FIELD_1 = b"\x0a"
_LEN_FIELD_2 = b"\x12"
_LEN_FIELD_3 = b"\x1a"
_FLOAT_ONE = struct.pack("<f", 1.0)
_FLOAT_ZERO = struct.pack("<f", 0.0)

# TFRecord frame: uint64 length, uint32 masked CRC of the length, data, uint32 masked CRC.
_FRAME_HEADER = 12
_FRAME_FOOTER = 4


def varint(value):
    """Protobuf base-128 varint of a non-negative int."""
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


_length_varint = functools.lru_cache(maxsize=65536)(varint)


def _length_delimited(tag, payload):
    return tag + varint(len(payload)) + payload


def _packed_list(packed_values):
    """An Int64List/FloatList; protobuf writes no field at all for an empty repeated field."""
    return _length_delimited(_LEN_FIELD_1, packed_values) if packed_values else b""


def _int64_feature(packed_values):
    return _length_delimited(_LEN_FIELD_3, _packed_list(packed_values))


def _float_feature(packed_values):
    return _length_delimited(_LEN_FIELD_2, _packed_list(packed_values))


class ExampleEncoder:
    """Serializes instances for fixed max_seq_length and masked_lm length.

    The internal pseudo id for unknown word-continuations (see `vocabulary`) is written as the
    unk id. Features of fixed byte length (0/1 lists, weights, the label) get precomputed
    prefixes, so only input_ids and the masked_lm ids/positions are wrapped per instance.
    """

    def __init__(self, max_seq_length, masked_lm_length, vocab):
        self.max_seq_length = max_seq_length
        self.masked_lm_length = masked_lm_length
        self._varints = [varint(i) for i in range(max(vocab.size, max_seq_length) + 1)]
        self._id_varints = list(self._varints)
        self._id_varints[vocab.unknown_continuation_id] = varint(vocab.unk_id)
        self._keys = {name: _length_delimited(_LEN_FIELD_1, name.encode("utf-8"))
                      for name in ("input_ids", "masked_lm_ids", "masked_lm_positions")}
        self._prefix = {}
        for name, payload_length, float_list in (
                ("input_mask", max_seq_length, False), ("segment_ids", max_seq_length, False),
                ("token_boundary", max_seq_length, False),
                ("masked_lm_weights", 4 * masked_lm_length, True),
                ("next_sentence_labels", 1, False)):
            entry = _entry(name, b"\x00" * payload_length, float_list)
            self._prefix[name] = entry[:len(entry) - payload_length]
        self._weights = [_FLOAT_ONE * k + _FLOAT_ZERO * (masked_lm_length - k)
                         for k in range(masked_lm_length + 1)]

    def _variable_entry(self, name, packed_values):
        """`_entry(name, packed_values)` for an int64 list, copying the values only once."""
        if not packed_values:
            return _entry(name, packed_values)
        key = self._keys[name]
        values_length = _length_varint(len(packed_values))
        list_length = 1 + len(values_length) + len(packed_values)
        feature_length = _length_varint(1 + len(_length_varint(list_length)) + list_length)
        inner_length = len(key) + 1 + len(feature_length) + 1 + len(
            _length_varint(list_length)) + list_length
        return b"".join((_LEN_FIELD_1, _length_varint(inner_length), key, _LEN_FIELD_2,
                         feature_length, _LEN_FIELD_3, _length_varint(list_length), _LEN_FIELD_1,
                         values_length, packed_values))

    def encode(self, masked, len_a, next_sentence_label):
        """The serialized Example of a `masking.MaskedSequence` whose A segment has `len_a` ids."""
        num_tokens = len(masked.tokens)
        pad = self.max_seq_length - num_tokens
        if pad < 0:
            raise ValueError(f"sequence of {num_tokens} tokens exceeds max_seq_length "
                             f"{self.max_seq_length}")
        num_predictions = len(masked.positions)
        prediction_pad = self.masked_lm_length - num_predictions
        if prediction_pad < 0:
            raise ValueError(f"{num_predictions} predictions exceed the masked_lm length "
                             f"{self.masked_lm_length}")
        id_varints = self._id_varints
        varints = self._varints
        prefix = self._prefix
        zeros = b"\x00" * pad
        prediction_zeros = b"\x00" * prediction_pad
        # Sorted by feature name, as deterministic serialization orders map entries.
        entries = (
            self._variable_entry(
                "input_ids", b"".join([id_varints[t] for t in masked.tokens.tolist()]) + zeros),
            # 0/1 values are single-byte varints: the bytes are already the packed encoding.
            prefix["input_mask"] + b"\x01" * num_tokens + zeros,
            self._variable_entry(
                "masked_lm_ids", b"".join([id_varints[t] for t in masked.labels]) + prediction_zeros),
            self._variable_entry(
                "masked_lm_positions",
                b"".join([varints[p] for p in masked.positions]) + prediction_zeros),
            prefix["masked_lm_weights"] + self._weights[num_predictions],
            prefix["next_sentence_labels"] + varints[next_sentence_label],
            prefix["segment_ids"] + b"\x00" * (len_a + 2) + b"\x01" * (num_tokens - len_a - 2)
            + zeros,
            prefix["token_boundary"] + bytes(masked.token_boundary) + zeros,
        )
        return _length_delimited(_LEN_FIELD_1, b"".join(entries))


def _entry(name, packed_values, float_list=False):
    """One Features map entry: key, then the Feature holding the packed list."""
    feature = _float_feature(packed_values) if float_list else _int64_feature(packed_values)
    key = _length_delimited(_LEN_FIELD_1, name.encode("utf-8"))
    return _length_delimited(_LEN_FIELD_1, key + _length_delimited(_LEN_FIELD_2, feature))


def read_frames(reader):
    """Yields each TFRecord frame (header, data and CRCs, verbatim) of a binary file object."""
    while True:
        header = reader.read(_FRAME_HEADER)
        if not header:
            return
        if len(header) < _FRAME_HEADER:
            raise errors.UserInputError(f"truncated TFRecord frame header in {getattr(reader, 'name', reader)}")
        if masked_crc32c(header[:8]) != struct.unpack("<I", header[8:])[0]:
            # Not a frame: the length would be garbage (a text file asked for petabytes).
            raise errors.UserInputError(f"not a TFRecord frame (bad length checksum) in "
                             f"{getattr(reader, 'name', reader)}")
        (length,) = struct.unpack("<Q", header[:8])
        body = reader.read(length + _FRAME_FOOTER)
        if len(body) < length + _FRAME_FOOTER:
            raise errors.UserInputError(f"truncated TFRecord frame in {getattr(reader, 'name', reader)}")
        yield header + body


def frame_data(frame):
    """The record bytes inside a frame from `read_frames`."""
    return frame[_FRAME_HEADER:-_FRAME_FOOTER]


def count_frames(reader):
    """The number of records in a TFRecord file, reading only the frame headers."""
    count = 0
    while True:
        header = reader.read(_FRAME_HEADER)
        if not header:
            return count
        (length,) = struct.unpack("<Q", header[:8])
        reader.seek(length + _FRAME_FOOTER, 1)
        count += 1
