"""Shared fixtures: real data from the registries (fetched once into ./data) and tiny configs."""

import os
import subprocess
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# scikit-learn, a reference some tests compare against, lives outside the environment (see
# requirements-test-references.txt): on this process's path, not on the scripts' it starts.
sys.path.append(os.path.join(sys.prefix, "test-references"))

from absl import logging as absl_logging
import pytest

from albert_tf.demo import data_sources
from albert_tf.config import AlbertConfig

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# slow tests named as they start under -q; the longest test files scheduled first
pytest_plugins = ["tests.slow_progress", "tests.longest_first"]


def script_env():
    """The environment of the scripts tests start: quiet TensorFlow, this checkout importable,
    no GPU (CI has none; a developer's GPU would make timings and numerics differ)."""
    return dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=REPO_ROOT, CUDA_VISIBLE_DEVICES="")


def copy_weights(source, target):
    """Gives `target` the weights of `source`, a model of the same layout, name by name."""
    for (name, value), (other, variable) in zip(source.checkpoint_variables().items(),
                                                target.checkpoint_variables().items()):
        assert name == other
        variable.assign(value)


def run_python(args, check=True, timeout=900):
    """`python <args>` in the checkout (a script and its flags, or `-c` code), as a user runs it;
    with `check`, a non-zero exit fails the test with the end of its stderr."""
    result = subprocess.run([sys.executable, *args], cwd=REPO_ROOT, env=script_env(),
                            capture_output=True, text=True, timeout=timeout)
    if check and result.returncode != 0:
        raise AssertionError(f"{args[0]} failed ({result.returncode}):\n{result.stderr[-5000:]}")
    return result


@pytest.fixture(autouse=True)
def absl_logger_level_restored():
    """A test that sets absl's verbosity leaves the next one the level it found: tests run in
    any order under `make test`'s two workers. (Flags parsed in this process by a module
    fixture still set it: a test reading absl's INFO lines sets `caplog`'s level on "absl".)"""
    logger = absl_logging.get_absl_logger()
    level = logger.level
    yield
    logger.setLevel(level)


@pytest.fixture(scope="session")
def real_data():
    """Paths of the real data sets (see albert_tf/demo/data_sources.py); `make data` fetches them."""
    return data_sources.fetch_all(os.path.join(REPO_ROOT, "data"))


@pytest.fixture
def tiny_config():
    """E != H, 2 groups x 2 inner groups over 4 layers: the shapes the original's tests exercise."""
    return AlbertConfig(
        vocab_size=99, embedding_size=16, hidden_size=32, num_hidden_layers=4,
        num_hidden_groups=2, inner_group_num=2, num_attention_heads=4, intermediate_size=37,
        max_position_embeddings=64, type_vocab_size=2, hidden_dropout_prob=0.1,
        attention_probs_dropout_prob=0.1)


def brown_config(**changes):
    """The tiny model of the task and export tests, sized for the 4,000-piece Brown
    `spm_model_file`: E != H, 2 layers; `changes` override any field."""
    sizes = dict(vocab_size=4000, embedding_size=16, hidden_size=32, num_hidden_layers=2,
                 num_attention_heads=4, intermediate_size=37, max_position_embeddings=64)
    return AlbertConfig(**dict(sizes, **changes))


@pytest.fixture(scope="session")
def spm_model_file(real_data, tmp_path_factory):
    """A 4,000-piece ALBERT-layout SentencePiece model trained on the Brown Corpus (a few seconds)."""
    from albert_tf.text import vocab
    prefix = str(tmp_path_factory.mktemp("spm") / "brown-4k")
    return vocab.train_albert_spm(real_data["brown"], prefix, vocab_size=4000)


@pytest.fixture(scope="session")
def digit_comma_spm_model_file(real_data, tmp_path_factory):
    """A 2,000-piece ALBERT-layout model on one Brown shard with the extra user-defined piece
    "000,". Brown-trained models never learn a piece like "000," (no "▁", ends in digit+comma),
    which the released 30k-clean.model has and which makes the digit-comma rule of
    encode_pieces emit its spurious "▁"; this model does. ~1 s."""
    from albert_tf.text import vocab
    prefix = str(tmp_path_factory.mktemp("spm") / "brown-2k-digit-comma")
    symbols = vocab.ALBERT_SPM_DEFAULTS["user_defined_symbols"] + ["000,"]
    return vocab.train_albert_spm(real_data["brown"][:1], prefix, vocab_size=2000,
                                  user_defined_symbols=symbols)
