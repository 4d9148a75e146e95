"""Keras saving for the models: `get_config` / `from_config` and `.keras` files.

The encoder is built from an `AlbertConfig` plus plain values (the one-hot and skip-padding
switches); a task model from an encoder plus plain values (label counts, dropout).
Both record their arguments at construction and create every variable then, so
`keras.saving.load_model` rebuilds them from the config and restores the weights. A task model's
config holds its encoder's serialized config (keras-hub's backbone-and-task layout). Checkpoints
in the original layout stay the format of record (`checkpoints`); `.keras` files are for Keras
users who save and load the Keras way.
"""

import keras

from albert_tf.config import AlbertConfig

PACKAGE = "albert_tf"


class ConfigSerializable:
    """Mixin for a `keras.Model` whose constructor is `(albert_config, **arguments)`."""

    def _record_arguments(self, config, **arguments):
        self._albert_config_dict = config.to_dict()
        self._arguments = arguments

    def get_config(self):
        return {**super().get_config(), "albert_config": dict(self._albert_config_dict),
                **self._arguments}

    def build_from_config(self, config):
        """Nothing to build: every variable exists once the model is constructed."""
        del config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        albert_config = AlbertConfig.from_dict(config.pop("albert_config"), f"{cls.__name__} config")
        return cls(albert_config, **config)


class EncoderSerializable:
    """Mixin for a task `keras.Model` whose constructor is `(encoder, **arguments)` and which
    keeps that encoder as `self.encoder`."""

    def _record_arguments(self, **arguments):
        self._arguments = arguments

    def get_config(self):
        return {**super().get_config(), "encoder": keras.layers.serialize(self.encoder),
                **self._arguments}

    def build_from_config(self, config):
        """Nothing to build: every variable exists once the model is constructed."""
        del config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        return cls(keras.layers.deserialize(config.pop("encoder")), **config)


def register(cls):
    """Registers a model class under `albert_tf>ClassName` for `keras.saving.load_model`."""
    return keras.saving.register_keras_serializable(package=PACKAGE)(cls)
