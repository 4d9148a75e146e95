"""GLUE and RACE with length buckets: the same predictions and metrics as padded batches, from
batches that are actually shorter."""

import numpy as np
import pytest
import tensorflow as tf

from albert_tf.config import AlbertConfig
from albert_tf.glue import run as glue_run
from albert_tf.glue import task as glue_task
from albert_tf.race import prepare, reader
from albert_tf.race import task as race_task
from albert_tf.training import prediction
from albert_tf.training.length_buckets import Batching
from tests import race_fixtures
from tests.conftest import copy_weights

SEQ = 64
BUCKETS = (16, 32, 64)


@pytest.fixture(scope="module")
def config():
    return AlbertConfig(vocab_size=4000, embedding_size=16, hidden_size=32, num_hidden_layers=2,
                        num_attention_heads=4, intermediate_size=37, max_position_embeddings=SEQ)


def _sst2_dev(glue_dir, real_data):
    """40 real movie-review sentences of under 15 words: most batches fit 16 or 32 of 64."""
    lines = ["sentence\tlabel"]
    with open(real_data["movie_reviews"], encoding="utf-8") as reader_:
        for number, line in enumerate(reader_):
            fields = line.rstrip("\n").split("\t")
            if len(fields) >= 3 and number % 17 == 0 and len(fields[-1].split()) < 15:
                lines.append(f"{fields[-1]}\t{int(float(fields[1]) > 0)}")
            if len(lines) > 40:
                break
    (glue_dir / "SST-2").mkdir(parents=True)
    (glue_dir / "SST-2" / "dev.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_glue_bucketed_predictions_equal_padded(tmp_path, config, spm_model_file, real_data):
    _sst2_dev(tmp_path / "glue", real_data)
    padded_model = None
    results = {}
    for buckets in (None, BUCKETS):
        job = glue_run.ClassifierJob("sst-2", str(tmp_path / "glue"), str(tmp_path / "out"),
                                     config, SEQ, spm_model_file=spm_model_file,
                                     batching=Batching.cut(buckets))
        path, examples = job.records("dev")
        task = glue_task.ClassifierTask(config, "sst-2", 2, SEQ, eval_file=path,
                                        batching=Batching.cut(buckets))
        model = task.build_model(tf.distribute.get_strategy())  # bucketed: skips padding too
        assert model.encoder.skip_padding == (buckets is not None)
        if padded_model is None:
            padded_model = model
        else:
            copy_weights(padded_model, model)
        dataset = task.eval_dataset(None, 8)
        lengths = {int(batch["input_ids"].shape[1]) for batch in dataset}
        state = prediction.aggregate(task, model, dataset)
        results[buckets] = (lengths, glue_task.concatenated(state),
                            task.reduce_aggregated_logs(state))
    (padded_lengths, padded, padded_metrics) = results[None]
    (bucket_lengths, bucketed, bucketed_metrics) = results[BUCKETS]
    assert padded_lengths == {SEQ} and min(bucket_lengths) <= 32 and bucket_lengths <= set(BUCKETS)
    np.testing.assert_allclose(bucketed["logits"], padded["logits"], atol=1e-5)
    np.testing.assert_array_equal(bucketed["predictions"], padded["predictions"])
    assert bucketed_metrics == pytest.approx(padded_metrics, abs=1e-6)
    assert len(padded["logits"]) == len(examples)


def test_race_bucketed_predictions_equal_padded(tmp_path, spm_model_file):
    """Articles of the fixtures take about 100 pieces: padded to 256, cut to 128."""
    seq = 256
    config = AlbertConfig(vocab_size=4000, embedding_size=16, hidden_size=32, num_hidden_layers=2,
                          num_attention_heads=4, intermediate_size=37, max_position_embeddings=seq)
    race_fixtures.write_all_txt(tmp_path, "dev", race_fixtures.make_articles(3, seed=4))
    settings = prepare.CacheSettings(str(tmp_path), reader.LEVELS, seq, 12, True,
                                     spm_model_file=spm_model_file, default_dir=str(tmp_path))
    path = prepare.prepare_split(settings, "dev")
    strategy = tf.distribute.get_strategy()
    padded_task = race_task.RaceTask(config, seq)
    bucketed_task = race_task.RaceTask(config, seq,
                                       batching=Batching.cut((16, 32, 64, 128, 256)))
    model = padded_task.build_model(strategy)
    skipping_model = bucketed_task.build_model(strategy)
    assert skipping_model.encoder.skip_padding and not model.encoder.skip_padding
    copy_weights(model, skipping_model)
    shapes = {tuple(batch["input_ids"].shape) for batch in bucketed_task.dataset_of(path, 4)}
    assert all(shape[-1] < seq for shape in shapes), shapes
    padded = race_task.arrays_of(prediction.aggregate(
        padded_task, model, padded_task.dataset_of(path, 4), strategy))
    bucketed = race_task.arrays_of(prediction.aggregate(
        bucketed_task, skipping_model, bucketed_task.dataset_of(path, 4), strategy))
    np.testing.assert_allclose(bucketed["logits"], padded["logits"], atol=1e-5)
    np.testing.assert_array_equal(bucketed["predictions"], padded["predictions"])
    np.testing.assert_array_equal(bucketed["label_ids"], padded["label_ids"])
