"""The weights of a Hugging Face model folder as {name: numpy array}: model.safetensors or
pytorch_model.bin, one file or shards listed by `<file>.index.json` (`save_pretrained`'s
`max_shard_size`). safetensors needs neither torch nor transformers; pytorch_model.bin needs
torch (read with `weights_only=True`: tensors only, no pickled code)."""

import json
import os

from safetensors import SafetensorError
from safetensors import numpy as safetensors_numpy

from albert_tf.huggingface import hf_format

# In the order transformers prefers them.
WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")
INDEX_SUFFIX = ".index.json"


class WeightsError(hf_format.HFFormatError):
    """A model folder whose weights cannot be read; the message names the file."""


def weights_source(folder):
    """The weights file (or shard index) of `folder` that `read_state` reads."""
    for name in WEIGHT_FILES:
        for candidate in (name, name + INDEX_SUFFIX):
            if os.path.exists(os.path.join(folder, candidate)):
                return os.path.join(folder, candidate)
    raise WeightsError(
        f"{folder}: no weights: expected {' or '.join(WEIGHT_FILES)} (or a sharded "
        f"{WEIGHT_FILES[0]}{INDEX_SUFFIX} with its shards); a config.json alone is not a model")


def read_state(folder):
    """({name: array}, the weights file or shard index read)."""
    source = weights_source(folder)
    if not source.endswith(INDEX_SUFFIX):
        return _read_file(source), source
    try:
        with open(source, encoding="utf-8") as reader:
            weight_map = json.load(reader)["weight_map"]
    except (ValueError, KeyError, TypeError) as error:
        raise WeightsError(f"{source}: not a shard index (expected JSON with a "
                           f"\"weight_map\" of tensor name → shard file): {error}") from error
    state = {}
    for shard in sorted(set(weight_map.values())):
        path = os.path.join(folder, shard)
        if not os.path.exists(path):
            raise WeightsError(f"{source}: lists shard {shard}, which {folder} does not have")
        state.update(_read_file(path))
    absent = sorted(set(weight_map) - set(state))
    if absent:
        raise WeightsError(f"{source}: tensor {absent[0]} is not in its shard {weight_map[absent[0]]}")
    return state, source


def _read_file(path):
    if path.endswith(".safetensors"):
        try:
            return safetensors_numpy.load_file(path)
        except (SafetensorError, OSError) as error:
            raise WeightsError(f"{path}: not a readable safetensors file ({error})") from error
    try:
        import torch
    except ImportError as error:
        raise WeightsError(f"{path}: reading PyTorch weights needs torch installed (or a "
                           "folder with model.safetensors)") from error
    try:
        tensors = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as error:  # torch raises pickle, zip and runtime errors alike
        raise WeightsError(f"{path}: not a readable PyTorch state dict ({error})") from error
    return {name: tensor.float().numpy() if tensor.dtype == torch.bfloat16 else tensor.numpy()
            for name, tensor in tensors.items()}
