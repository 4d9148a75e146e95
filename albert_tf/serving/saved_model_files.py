"""Cheap checks of a SavedModel version's files before TensorFlow loads it, so that a damaged
file is named: TensorFlow reports an empty `saved_model.pb` as "requires a `tags=` argument
... 0 MetaGraphs", an empty `variables.index` as "file is too short to be an sstable", a
truncated data shard as "Read less bytes than requested", none of them naming the file."""

import os

import tensorflow as tf
from google.protobuf import message
from tensorflow.core.protobuf import saved_model_pb2
from tensorflow.python.training import py_checkpoint_reader

from albert_tf.serving.errors import Code, ServingError


def load_error(path, reason):
    """The failed load of a version, naming the file or folder `path` at fault (INTERNAL)."""
    return ServingError(f"{path}: {reason}", code=Code.INTERNAL)


def _size(path):
    return tf.io.gfile.stat(path).length


def read_saved_model_proto(model_dir):
    """The SavedModel proto of `<model_dir>/saved_model.pb`, refused naming the file when it is
    empty, not a SavedModel proto (damaged, truncated) or has no MetaGraph."""
    path = os.path.join(model_dir, "saved_model.pb")
    with tf.io.gfile.GFile(path, "rb") as reader:
        data = reader.read()
    if not data:
        raise load_error(path, "the file is empty, not a SavedModel")
    proto = saved_model_pb2.SavedModel()
    try:
        proto.ParseFromString(data)
    except message.DecodeError as error:
        raise load_error(path, f"damaged or truncated SavedModel ({len(data)} bytes): not a "
                               f"SavedModel proto ({error})") from error
    if not proto.meta_graphs or not proto.meta_graphs[0].HasField("object_graph_def"):
        raise load_error(path, f"damaged or truncated SavedModel ({len(data)} bytes): no "
                               f"complete MetaGraph")
    return proto


def data_shards(model_dir):
    """The paths of the variables data shards the index names (variables.data-0000i-of-0000n)."""
    variables = os.path.join(model_dir, "variables")
    names = [name for name in tf.io.gfile.listdir(variables)
             if name.startswith("variables.data-")]
    count = int(names[0].rsplit("-of-", 1)[1]) if names else 1
    return [os.path.join(variables, f"variables.data-{i:05d}-of-{count:05d}")
            for i in range(count)]


def check_files(model_dir):
    """Refuses the version in `model_dir` naming its first damaged file: saved_model.pb (see
    `read_saved_model_proto`), variables/variables.index (empty, not a checkpoint index), a
    data shard missing or empty, an asset file the MetaGraph lists but the folder lacks."""
    proto = read_saved_model_proto(model_dir)
    variables = os.path.join(model_dir, "variables")
    index = os.path.join(variables, "variables.index")
    if tf.io.gfile.exists(index):
        if _size(index) == 0:
            raise load_error(index, "the file is empty, not a checkpoint index")
        for shard in data_shards(model_dir):
            if not tf.io.gfile.exists(shard):
                raise load_error(shard, "missing: the variables data shard the index expects")
        try:
            py_checkpoint_reader.NewCheckpointReader(os.path.join(variables, "variables"))
        except (tf.errors.OpError, ValueError, RuntimeError) as error:
            raise load_error(index, f"damaged or truncated checkpoint index ({_size(index)} "
                                    f"bytes): {error}") from error
    elif tf.io.gfile.isdir(variables) and tf.io.gfile.listdir(variables):
        raise load_error(index, "missing: the variables folder has data but no index")
    for asset in proto.meta_graphs[0].asset_file_def:
        path = os.path.join(model_dir, "assets", asset.filename)
        if not tf.io.gfile.exists(path):
            raise load_error(path, "missing: an asset file the SavedModel lists")


def load(model_dir):
    """tf.saved_model.load after `check_files`; a load error left (a data shard cut short)
    names the version folder and, when the data is at fault, its shards."""
    check_files(model_dir)
    try:
        return tf.saved_model.load(model_dir)
    except Exception as error:
        text = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        if "less bytes than requested" in text or "data-" in text:
            shards = ", ".join(data_shards(model_dir))
            raise load_error(shards, f"damaged or truncated variables data ({text})") from error
        raise load_error(model_dir, f"the SavedModel does not load: {type(error).__name__}: "
                                    f"{text}") from error
