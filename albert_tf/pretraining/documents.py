"""Reading one input file into documents of tokenized sentences, as the original create_pretraining_data.py.

Format: one sentence per line; a line that is empty after preprocessing ends the document.
Lines are split like Python's text mode (the original opened files with mode "r"): "\\n",
"\\r\\n" and a lone "\\r" all end a line. Bytes that are not UTF-8 are replaced by U+FFFD
(like `errors="replace"`) and counted, where the original crashed.

Documents are stored compactly: one numpy array of token ids per document plus the offsets
where its sentences end, so a file's documents cost 2 bytes per token (4 for vocabularies over
65,535 ids) instead of a Python list of int objects per sentence, and segments are slices
(views) of it.
"""

import array
import dataclasses
import os

import numpy as np

from albert_tf import errors
from albert_tf.files import text_check

_LINES_PER_BATCH = 4096


@dataclasses.dataclass
class ReadStats:
    lines: int = 0
    replaced_bytes: int = 0
    sentences: int = 0
    tokens: int = 0


class Document:
    """A document's token ids and sentence bounds: sentence i is tokens[bounds[i]:bounds[i+1]]."""

    __slots__ = ("tokens", "bounds")

    def __init__(self, tokens, bounds):
        self.tokens = tokens
        self.bounds = bounds

    @property
    def num_sentences(self):
        return len(self.bounds) - 1

    def sentence(self, index):
        return self.tokens[self.bounds[index]:self.bounds[index + 1]]


def decode_utf8(raw):
    """`raw.decode("utf-8", "replace")` and the number of bytes that were replaced."""
    try:
        return raw.decode("utf-8"), 0
    except UnicodeDecodeError:
        pass
    parts = []
    replaced = 0
    position = 0
    while True:
        try:
            parts.append(raw[position:].decode("utf-8"))
            return "".join(parts), replaced
        except UnicodeDecodeError as error:
            parts.append(raw[position:position + error.start].decode("utf-8"))
            parts.append("\ufffd")
            replaced += error.end - error.start
            position += error.end


def _open_binary(path):
    if "://" in path:
        import tensorflow as tf  # Only remote file systems need TensorFlow's gfile.
        return tf.io.gfile.GFile(path, "rb")
    return open(path, "rb")


def _text_lines(path, stats):
    """Yields the file's lines as str without line endings, split like Python's text mode
    ("\n", "\r\n" and a bare "\r" each end a line). The original read with `tf.gfile`
    readline, which splits at "\n" only and drops every "\r": the two agree except on a bare
    "\r", which the original deleted ("one\rtwo" was one line, "onetwo")."""
    with _open_binary(path) as reader:
        for raw in reader:
            text, replaced = decode_utf8(raw)
            stats.replaced_bytes += replaced
            if "\r" in text:
                lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
                if not lines[-1]:
                    lines.pop()  # The text ended with a line break.
                yield from lines
            else:
                yield text[:-1] if text.endswith("\n") else text


def _batches(lines):
    batch = []
    for line in lines:
        batch.append(line)
        if len(batch) == _LINES_PER_BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


def read_documents(path, line_encoder, typecode):
    """Returns (documents, ReadStats) for one input file; empty documents are dropped.

    Raises ValueError naming the file if it has no line with tokens.
    """
    stats = ReadStats()
    documents = []
    tokens = array.array(typecode)
    bounds = array.array("q", [0])

    def close_document():
        nonlocal tokens, bounds
        if len(bounds) > 1:
            documents.append(Document(np.frombuffer(tokens, dtype=_DTYPES[typecode]), bounds))
            tokens = array.array(typecode)
            bounds = array.array("q", [0])

    for batch in _batches(_text_lines(path, stats)):
        stats.lines += len(batch)
        for ids in line_encoder.encode(batch):
            if ids is None:
                close_document()
            elif ids:
                tokens.extend(ids)
                bounds.append(len(tokens))
                stats.sentences += 1
                stats.tokens += len(ids)
    close_document()
    if not documents:
        raise errors.UserInputError(f"{path}: input file contains no text (no line with tokens); expected "
                         "one sentence per line with blank lines between documents")
    return documents, stats


_DTYPES = {"H": np.uint16, "i": np.int32}


def token_typecode(num_ids):
    """The smallest array typecode that holds ids 0..num_ids-1."""
    return "H" if num_ids <= 1 << 16 else "i"


def check_not_empty(path):
    """Fails early, naming the file, on an input file with no bytes at all or that is not
    UTF-8 text (a binary file or UTF-16 would otherwise become "training data")."""
    if "://" not in path and os.path.getsize(path) == 0:
        raise errors.UserInputError(f"{path}: input file is empty")
    text_check.check_is_text(path)
