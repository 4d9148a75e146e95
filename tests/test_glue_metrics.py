"""GLUE metrics against scikit-learn and scipy on random inputs."""

import numpy as np
import pytest
from scipy import stats
from sklearn import metrics as sk

from albert_tf.glue import features, metrics, processors


@pytest.mark.parametrize("seed", range(5))
def test_classification_metrics_match_sklearn(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(20, 300))
    labels = rng.integers(0, 2, n)
    predictions = np.where(rng.random(n) < 0.7, labels, 1 - labels)
    weights = (rng.random(n) < 0.9).astype(np.float64)
    assert metrics.accuracy(labels, predictions) == pytest.approx(sk.accuracy_score(labels, predictions))
    assert metrics.accuracy(labels, predictions, weights) == pytest.approx(
        sk.accuracy_score(labels, predictions, sample_weight=weights))
    assert metrics.matthews_corrcoef(labels, predictions) == pytest.approx(
        sk.matthews_corrcoef(labels, predictions))
    assert metrics.matthews_corrcoef(labels, predictions, weights) == pytest.approx(
        sk.matthews_corrcoef(labels, predictions, sample_weight=weights))
    assert metrics.f1_score(labels, predictions) == pytest.approx(sk.f1_score(labels, predictions))
    assert metrics.f1_score(labels, predictions, weights) == pytest.approx(
        sk.f1_score(labels, predictions, sample_weight=weights))


def test_three_class_accuracy_and_degenerate_cases():
    rng = np.random.default_rng(7)
    labels, predictions = rng.integers(0, 3, 100), rng.integers(0, 3, 100)
    assert metrics.accuracy(labels, predictions) == pytest.approx(sk.accuracy_score(labels, predictions))
    constant = np.zeros(10, dtype=int)
    assert metrics.matthews_corrcoef(rng.integers(0, 2, 10), constant) == sk.matthews_corrcoef(
        rng.integers(0, 2, 10), constant) == 0.0
    assert metrics.f1_score(np.ones(4), np.zeros(4)) == 0.0


@pytest.mark.parametrize("seed", range(5))
def test_regression_metrics_match_scipy(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(20, 300))
    labels = np.round(rng.uniform(0, 5, n), 1)  # rounding makes ties, which spearman must average
    predictions = labels + rng.normal(0, 1.5, n)
    predictions[: n // 5] = np.round(predictions[: n // 5])
    assert metrics.pearson(labels, predictions) == pytest.approx(stats.pearsonr(labels, predictions)[0])
    assert metrics.spearman(labels, predictions) == pytest.approx(stats.spearmanr(labels, predictions)[0])
    assert metrics.mean_squared_error(labels, predictions) == pytest.approx(
        sk.mean_squared_error(labels, predictions))
    weights = (rng.random(n) < 0.8).astype(np.float64)
    keep = weights > 0
    assert metrics.pearson(labels, predictions, weights) == pytest.approx(
        stats.pearsonr(labels[keep], predictions[keep])[0])
    assert metrics.spearman(labels, predictions, weights) == pytest.approx(
        stats.spearmanr(labels[keep], predictions[keep])[0])
    assert metrics.mean_squared_error(labels, predictions, weights) == pytest.approx(
        sk.mean_squared_error(labels[keep], predictions[keep]))


def test_glue_metric_names_per_task():
    rng = np.random.default_rng(3)
    labels, predictions, loss = rng.integers(0, 2, 50), rng.integers(0, 2, 50), rng.random(50)
    assert list(metrics.glue_metrics("cola", labels, predictions, loss)) == [
        "matthew_corr", "eval_accuracy", "eval_loss"]
    assert list(metrics.glue_metrics("MRPC", labels, predictions, loss)) == ["eval_accuracy", "f1", "eval_loss"]
    assert list(metrics.glue_metrics("qqp", labels, predictions, loss)) == ["eval_accuracy", "f1", "eval_loss"]
    assert list(metrics.glue_metrics("sst-2", labels, predictions, loss)) == ["eval_accuracy", "eval_loss"]
    results = metrics.glue_metrics("sts-b", rng.random(50), rng.random(50), loss)
    assert list(results) == ["pearson", "spearman", "MSE", "eval_loss"]
    assert results["eval_loss"] == pytest.approx(loss.mean())
    assert [metrics.selection_metric(t) for t in ("sts-b", "cola", "mnli")] == [
        "pearson", "matthew_corr", "eval_accuracy"]


def test_a_new_task_is_scored_by_what_its_processor_declares(monkeypatch):
    """Task identity lives on the processor: a new regression task gets regression metrics,
    features and model selection without touching metrics or features."""
    class SicknessProcessor(processors.StsbProcessor):
        task_dir = "SICK-R"
        metric_names = ("spearman", "MSE")
        selection_metric = "spearman"
    monkeypatch.setitem(processors.PROCESSORS, "sick-r", SicknessProcessor)
    rng = np.random.default_rng(4)
    labels = rng.random(40) * 5
    results = metrics.glue_metrics("SICK-R", labels, labels + 0.1, rng.random(40))
    assert list(results) == ["spearman", "MSE", "eval_loss"]
    assert results["spearman"] == pytest.approx(1.0) and results["MSE"] == pytest.approx(0.01)
    assert metrics.selection_metric("sick-r") == "spearman"
    assert features.is_regression("sick-r") and not features.is_regression("sst-2")
