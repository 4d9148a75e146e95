"""`AlbertConfig`: the original `albert_config.json`, with its defaults, unknown keys kept.

The original copies every JSON key onto the object (released files carry `net_structure_type`,
`gap_size`, `num_memory_blocks`, `layers_to_keep`), so a round trip must keep them too.
"""

import copy
import json
import os

from albert_tf import io_utils

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


class ConfigError(ValueError):
    """A config field is missing or has a value the model cannot use."""


class AlbertConfig:
    """Every field of the original `AlbertConfig`; extra keys are stored and written back."""

    def __init__(self, vocab_size, **fields):
        values = dict(_DEFAULTS)
        values.update(fields)
        values["vocab_size"] = vocab_size
        for key, value in values.items():
            setattr(self, key, value)

    @classmethod
    def from_dict(cls, json_object, source="<dict>"):
        if not isinstance(json_object, dict):
            raise ConfigError(f"{source}: expected a JSON object, got {type(json_object).__name__}")
        if "vocab_size" not in json_object:
            raise ConfigError(f"{source}: required field 'vocab_size' is missing")
        fields = dict(json_object)
        config = cls(fields.pop("vocab_size"), **fields)
        config.validate(source)
        return config

    @classmethod
    def from_json_file(cls, json_file):
        if not os.path.exists(json_file):
            raise ConfigError(f"{json_file}: config file does not exist")
        with open(json_file, encoding="utf-8") as reader:
            text = reader.read()
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
        for field in _INT_FIELDS:
            value = getattr(self, field)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ConfigError(f"{source}: field '{field}' must be a positive integer, got {value!r}")
        for field in _FLOAT_FIELDS:
            value = getattr(self, field)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                raise ConfigError(f"{source}: field '{field}' must be a non-negative number, got {value!r}")
        for field in ("hidden_dropout_prob", "attention_probs_dropout_prob"):
            if getattr(self, field) >= 1:
                raise ConfigError(f"{source}: field '{field}' must be below 1, got {getattr(self, field)!r}")
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

    def __repr__(self):
        return f"AlbertConfig({self.to_dict()!r})"
