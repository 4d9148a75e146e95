"""Keras saving for the models: `get_config` / `from_config` and `.keras` files.

Every model is built from an `AlbertConfig` plus plain values (label counts, dropout, the
Einsum switch), all recorded at construction; its variables all exist once it is constructed,
so `keras.saving.load_model` rebuilds it from the config and restores the weights. Checkpoints
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


def register(cls):
    """Registers a model class under `albert_tf>ClassName` for `keras.saving.load_model`."""
    return keras.saving.register_keras_serializable(package=PACKAGE)(cls)
