"""`AlbertConfig`: the original `albert_config.json`, with its defaults.

The released files carry keys the model does not use (`net_structure_type`, `gap_size`,
`num_memory_blocks`, `layers_to_keep`); they are accepted and kept through a round trip. Any
other key is an error that suggests the field it was probably meant to be: the original copied
every key onto the object, so a misspelt `hiden_size` silently built the 4096-wide default.
For the same reason `hidden_size` and `num_attention_heads` must be given; the other size
fields fall back to the original defaults with a warning naming each.
"""

import copy
import difflib
import json
import math
import os

from absl import logging

from albert_tf import errors
from albert_tf.files import input_files, io_utils

_DEFAULTS = {
    "embedding_size": 128,
    "hidden_size": 4096,
    "num_hidden_layers": 12,
    "num_hidden_groups": 1,
    "num_attention_heads": 64,
    "intermediate_size": 16384,
    "inner_group_num": 1,
    "down_scale_factor": 1,
    "hidden_act": "gelu",
    "hidden_dropout_prob": 0.0,
    "attention_probs_dropout_prob": 0.0,
    "max_position_embeddings": 512,
    "type_vocab_size": 2,
    "initializer_range": 0.02,
}

# Keys of the released configs that the model ignores, kept through a round trip.
_RELEASED_EXTRA_KEYS = ("net_structure_type", "gap_size", "num_memory_blocks", "layers_to_keep")
KNOWN_KEYS = frozenset(("vocab_size", *_DEFAULTS, *_RELEASED_EXTRA_KEYS))
REQUIRED_KEYS = ("vocab_size", "hidden_size", "num_attention_heads")
_DEFAULTED_SIZE_KEYS = ("embedding_size", "num_hidden_layers", "intermediate_size")

_INT_FIELDS = (
    "vocab_size", "embedding_size", "hidden_size", "num_hidden_layers", "num_hidden_groups",
    "num_attention_heads", "intermediate_size", "inner_group_num", "max_position_embeddings",
    "type_vocab_size",
)
_FLOAT_FIELDS = ("hidden_dropout_prob", "attention_probs_dropout_prob", "initializer_range")
HIDDEN_ACTS = ("gelu", "relu", "tanh", "linear")

PUBLISHED_MODELS = tuple(
    f"{size}_{version}"
    for version in ("v1", "v2")
    for size in ("base", "large", "xlarge", "xxlarge")
)


class ConfigError(errors.UserInputError):
    """A config field is missing or has a value the model cannot use."""


class AlbertConfig:
    """Every field of the original `AlbertConfig`; extra keys are stored and written back."""

    def __init__(self, vocab_size, **fields):
        _check_known_keys(fields, "AlbertConfig")
        values = dict(_DEFAULTS)
        values.update(fields)
        values["vocab_size"] = vocab_size
        for key, value in values.items():
            setattr(self, key, value)

    @classmethod
    def from_dict(cls, json_object, source="<dict>"):
        if not isinstance(json_object, dict):
            raise ConfigError(f"{source}: expected a JSON object, got {type(json_object).__name__}")
        _check_known_keys(json_object, source)
        if "vocab_size" not in json_object:
            raise ConfigError(f"{source}: required field 'vocab_size' is missing")
        fields = dict(json_object)
        config = cls(fields.pop("vocab_size"), **fields)
        config._validate_values(source, json_object)  # a wrong value first, then what is missing
        for key in REQUIRED_KEYS[1:]:
            if key not in json_object:
                raise ConfigError(f"{source}: required field '{key}' is missing (the original "
                                  f"default {_DEFAULTS[key]} is the xxlarge model's)")
        config.validate(source)
        defaulted = [key for key in _DEFAULTED_SIZE_KEYS if key not in json_object]
        if defaulted:
            logging.warning("%s: %s not given; using the original defaults %s", source,
                            ", ".join(defaulted), ", ".join(f"{key}={_DEFAULTS[key]}"
                                                           for key in defaulted))
        return config

    @classmethod
    def from_json_file(cls, json_file):
        if not os.path.exists(json_file):
            raise ConfigError(f"{json_file}: config file does not exist")
        text = input_files.read_text(json_file, "config file")
        try:
            parsed = json.loads(text)
        except json.JSONDecodeError as error:
            raise ConfigError(
                f"{json_file}: malformed JSON at line {error.lineno}, column {error.colno}: "
                f"{error.msg}") from error
        return cls.from_dict(parsed, source=json_file)

    @classmethod
    def published(cls, name):
        """One of the eight released English configs, e.g. `base_v2` or `xxlarge_v1`."""
        if name not in PUBLISHED_MODELS:
            raise ConfigError(f"unknown published model {name!r}; expected one of {PUBLISHED_MODELS}")
        path = os.path.join(os.path.dirname(__file__), "configs", f"albert_{name}.json")
        return cls.from_json_file(path)

    def validate(self, source="<config>"):
        """Checks what the model relies on, naming the field that is wrong."""
        self._validate_values(source)
        if self.hidden_size % self.num_attention_heads:
            raise ConfigError(
                f"{source}: 'hidden_size' ({self.hidden_size}) is not a multiple of "
                f"'num_attention_heads' ({self.num_attention_heads})")
        if self.num_hidden_groups > self.num_hidden_layers:
            raise ConfigError(
                f"{source}: 'num_hidden_groups' ({self.num_hidden_groups}) exceeds "
                f"'num_hidden_layers' ({self.num_hidden_layers})")
        if self.hidden_act not in HIDDEN_ACTS:
            raise ConfigError(f"{source}: 'hidden_act' must be one of {HIDDEN_ACTS}, got {self.hidden_act!r}")
        return self

    def check_vocabulary(self, vocabulary_size, vocabulary_source, config_source="the config"):
        """A tokenizer with more ids than `vocab_size` would fail deep in the graph (a gather
        index error on the first unseen id): refuse it up front, naming both files."""
        if vocabulary_size > self.vocab_size:
            raise ConfigError(
                f"{config_source}: vocab_size {self.vocab_size} is smaller than the "
                f"{vocabulary_size} ids of {vocabulary_source}; use the config the vocabulary "
                f"was made with, or set vocab_size >= {vocabulary_size}")

    def check_max_seq_length(self, max_seq_length, config_source="--albert_config_file"):
        """The model has position embeddings for `max_position_embeddings` tokens only: a
        longer --max_seq_length would fail at the first batch instead of at the start."""
        if max_seq_length > self.max_position_embeddings:
            raise ConfigError(
                f"--max_seq_length={max_seq_length} exceeds max_position_embeddings="
                f"{self.max_position_embeddings} of {config_source}: --max_seq_length must be "
                "<= max_position_embeddings (the longest sequence the model was trained on)")

    def _validate_values(self, source, given=None):
        """Each field's own range (of the `given` keys only, when set)."""
        for field in _INT_FIELDS:
            if given is not None and field not in given:
                continue
            value = getattr(self, field)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ConfigError(f"{source}: field '{field}' must be a positive integer, got {value!r}")
        for field in _FLOAT_FIELDS:
            if given is not None and field not in given:
                continue
            value = getattr(self, field)
            if (isinstance(value, bool) or not isinstance(value, (int, float))
                    or not math.isfinite(value) or value < 0):
                raise ConfigError(f"{source}: field '{field}' must be a finite non-negative "
                                  f"number, got {value!r}")
        for field in ("hidden_dropout_prob", "attention_probs_dropout_prob"):
            if (given is None or field in given) and getattr(self, field) >= 1:
                raise ConfigError(f"{source}: field '{field}' must be below 1, got {getattr(self, field)!r}")

    def group_index(self, layer_idx):
        """The original's `int(layer_idx / num_hidden_layers * num_hidden_groups)`."""
        return int(layer_idx / self.num_hidden_layers * self.num_hidden_groups)

    def to_dict(self):
        return copy.deepcopy(self.__dict__)

    def to_json_string(self):
        return json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"

    def to_json_file(self, json_file):
        io_utils.atomic_write_text(json_file, self.to_json_string())

    def __eq__(self, other):
        return isinstance(other, AlbertConfig) and self.to_dict() == other.to_dict()

    def check_beside(self, directory, name="albert_config.json"):
        """Raises ConfigError when `directory` holds another config: its checkpoints belong to
        another model, and resuming them would load the wrong shapes. Returns the path."""
        path = os.path.join(directory, name)
        if os.path.exists(path):
            existing = AlbertConfig.from_json_file(path)
            if existing != self:
                changed = sorted(key for key in set(existing.to_dict()) | set(self.to_dict())
                                 if getattr(existing, key, None) != getattr(self, key, None))
                raise ConfigError(
                    f"{path}: the output directory holds a run of another model config "
                    f"(differs in {', '.join(changed)}); use another --output_dir")
        return path

    def write_beside(self, directory, name="albert_config.json"):
        """Logs the effective config and writes it into `directory` (next to the checkpoints),
        unless the same config is there already (another one is refused: `check_beside`)."""
        path = self.check_beside(directory, name)
        logging.info("Effective model config: %s", json.dumps(self.to_dict(), sort_keys=True))
        if not os.path.exists(path):
            self.to_json_file(path)
        return path

    def __repr__(self):
        return f"AlbertConfig({self.to_dict()!r})"


def _check_known_keys(fields, source):
    for key in fields:
        if key not in KNOWN_KEYS:
            close = difflib.get_close_matches(key, sorted(KNOWN_KEYS), n=1)
            hint = f"; did you mean '{close[0]}'?" if close else ""
            raise ConfigError(f"{source}: unknown field '{key}'{hint} (known fields: "
                              f"{', '.join(sorted(KNOWN_KEYS))})")
