"""One input file's deterministic stream of serialized pretraining instances.

Everything random comes from generators seeded by (random_seed, the input file's base name,
purpose, dupe pass): a file's output is the same whichever process makes it, whatever
--num_workers is, and whether the file is processed alone or with others.

Memory: the file's documents (token ids) plus a shuffle buffer of `shuffle_buffer_size`
serialized instances; dupe passes are streamed, never held. The original held every instance
of every pass of the corpus and shuffled them at the end; here each pass visits the documents
in a fresh random order and the buffer mixes the stream (each output is drawn at random from
the buffer).
"""

import dataclasses
import hashlib
import os
import random

import numpy as np

from albert_tf.pretraining import documents as documents_lib
from albert_tf.pretraining import instances as instances_lib
from albert_tf.pretraining import masking
from albert_tf.pretraining import records
from albert_tf.pretraining import text_encoding
from albert_tf.pretraining import vocabulary as vocabulary_lib

_PROGRESS_EVERY_DOCUMENTS = 32


def derive_seed(random_seed, file_key, purpose, index=0):
    """A 64-bit seed for one purpose; stable across processes (unlike hash())."""
    text = f"{random_seed}\x00{file_key}\x00{purpose}\x00{index}"
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "little")


@dataclasses.dataclass
class FileStats:
    """What one input file gave; summed over files for the run summary."""
    path: str
    input_bytes: int = 0
    lines: int = 0
    replaced_bytes: int = 0
    documents: int = 0
    sentences: int = 0
    document_tokens: int = 0
    instances: int = 0
    tokens: int = 0
    predictions: int = 0
    # Pairs by how they were made (instances.IN_ORDER, SWAPPED, RANDOM_DOCUMENT).
    pair_kinds: list = dataclasses.field(default_factory=lambda: [0, 0, 0])
    masking: dict = dataclasses.field(default_factory=dict)


class Resources:
    """Per-process objects built once from the options and shared by every file."""

    def __init__(self, options):
        self.options = options
        self.vocab = vocabulary_lib.Vocabulary.from_files(
            options.vocab_file, options.spm_model_file, options.do_lower_case)
        self.line_encoder = text_encoding.LineEncoder(self.vocab, options.do_lower_case)
        self.example_encoder = records.ExampleEncoder(
            options.max_seq_length, options.masked_lm_length, self.vocab)
        self.typecode = documents_lib.token_typecode(self.vocab.size + 1)

    def new_masker(self):
        options = self.options
        return masking.Masker(
            self.vocab, options.masked_lm_prob, options.max_predictions_per_seq, options.ngram,
            options.favor_shorter_ngram, options.do_whole_word_mask, options.do_permutation)


class _ShuffleBuffer:
    """Holds up to `capacity` records and releases a random one for each record added."""

    def __init__(self, capacity, rng):
        self.capacity = capacity
        self.rng = rng
        self.items = []

    def push(self, item):
        """Returns the released record, or None while the buffer fills."""
        if len(self.items) < self.capacity:
            self.items.append(item)
            return None
        index = self.rng.randrange(self.capacity)
        released = self.items[index]
        self.items[index] = item
        return released

    def drain(self):
        self.rng.shuffle(self.items)
        items, self.items = self.items, []
        return items


def produce(path, resources, chunk_size=128):
    """Yields (records, fraction_done, num_documents) chunks for one input file, then returns
    its FileStats as the generator's return value."""
    options = resources.options
    vocab = resources.vocab
    documents, read_stats = documents_lib.read_documents(
        path, resources.line_encoder, resources.typecode)
    stats = FileStats(path=path, input_bytes=_size(path), lines=read_stats.lines,
                      replaced_bytes=read_stats.replaced_bytes, documents=len(documents),
                      sentences=read_stats.sentences, document_tokens=read_stats.tokens)
    file_key = os.path.basename(path)
    masker = resources.new_masker()
    encode = resources.example_encoder.encode
    buffer = _ShuffleBuffer(options.shuffle_buffer_size,
                            random.Random(derive_seed(options.random_seed, file_key, "shuffle")))
    max_num_tokens = options.max_seq_length - 3
    cls_id, sep_id = vocab.cls_id, vocab.sep_id
    num_documents = len(documents)
    pair_kinds = stats.pair_kinds
    chunk = []
    for pass_index in range(options.dupe_factor):
        rng = random.Random(derive_seed(options.random_seed, file_key, "pass", pass_index))
        order = list(range(num_documents))
        rng.shuffle(order)
        for done, document_index in enumerate(order, 1):
            for tokens_a, tokens_b, kind in instances_lib.segment_pairs(
                    documents, document_index, max_num_tokens, options.short_seq_prob,
                    options.random_next_sentence, rng):
                len_a = len(tokens_a)
                tokens = np.empty(len_a + len(tokens_b) + 3, dtype=np.int32)
                tokens[0] = cls_id
                tokens[1:len_a + 1] = tokens_a
                tokens[len_a + 1] = sep_id
                tokens[len_a + 2:-1] = tokens_b
                tokens[-1] = sep_id
                masked = masker.mask(tokens, len_a + 1, rng)
                record = encode(masked, len_a, 0 if kind == instances_lib.IN_ORDER else 1)
                stats.instances += 1
                stats.tokens += len(tokens)
                stats.predictions += len(masked.positions)
                pair_kinds[kind] += 1
                released = buffer.push(record)
                if released is not None:
                    chunk.append(released)
            if len(chunk) >= chunk_size or done % _PROGRESS_EVERY_DOCUMENTS == 0:
                yield chunk, (pass_index + done / num_documents) / options.dupe_factor, num_documents
                chunk = []
    chunk.extend(buffer.drain())
    for start in range(0, len(chunk), chunk_size):
        yield chunk[start:start + chunk_size], 1.0, num_documents
    stats.masking = dataclasses.asdict(masker.stats)
    return stats


def _size(path):
    if "://" in path:
        import tensorflow as tf  # Only remote file systems need TensorFlow's gfile.
        return tf.io.gfile.stat(path).length
    return os.path.getsize(path)
