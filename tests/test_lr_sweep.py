"""The own-data learning-rate sweep (albert_tf.demo.lr_sweep): its tasks are real files in the
shapes run_classifier.py's file flags read, its runs are the commands a user types, and its
summary leaves collapsed runs out of a cell's mean as the verdict rule says, counting them."""

import csv
import json
import math
import os

import pytest

from albert_tf.demo import docs_results, lr_sweep, own_data_tasks


def test_the_grid_runs_the_shortest_cells_first():
    cells = lr_sweep.grid(["3e-4", "1e-4"], ["300", "100"], ["32"])
    assert [(c["train_steps"], c["learning_rate"]) for c in cells] == [
        (100, 3e-4), (100, 1e-4), (300, 3e-4), (300, 1e-4)]


def test_each_run_is_run_classifier_on_the_task_files_with_the_cells_settings():
    cell = {"learning_rate": 1e-4, "train_steps": 300, "batch_size": 16}
    flags = {"albert_config_file": "c.json", "spm_model_file": "s.model", "init_checkpoint": "pre/model.ckpt-9",
             "max_seq_length": 64, "precision": "float32"}
    command = lr_sweep.classifier_command("python", {"train": "t.csv", "dev": "d.csv"}, "out/r", cell, 2, flags)
    assert command[:4] == ["python", "run_classifier.py", "--train_file=t.csv", "--validation_file=d.csv"]
    for flag in ("--learning_rate=0.0001", "--train_step=300", "--warmup_step=30", "--train_batch_size=16",
                 "--save_checkpoints_steps=300", "--seed=2", "--init_checkpoint=pre/model.ckpt-9"):
        assert flag in command
    assert "--allow_random_init" in lr_sweep.classifier_command(
        "python", {"train": "t", "dev": "d"}, "o", cell, 1, dict(flags, init_checkpoint=None))


def test_collapsed_runs_are_counted_and_left_out_of_the_mean():
    rates = (0.538, 0.462)  # a 2-label dev set's one-class accuracies
    summary = lr_sweep.cell_summary([0.462, 0.70, 0.74], rates)
    assert summary["collapsed"] == 1 and summary["kept"] == 2 and summary["mean"] == 0.72
    assert summary["se"] == pytest.approx(0.02)  # std 0.0283 over sqrt(2)
    assert lr_sweep.cell_summary([0.538, 0.462], rates)["mean"] is None


def test_each_rate_is_paired_by_seed_against_the_reference_rate():
    cells = [dict(learning_rate=rate, train_steps=100, batch_size=32, seeds=[1, 2, 3], scores=scores)
             for rate, scores in ((3e-4, [0.60, 0.62, 0.538]), (1e-4, [0.70, 0.71, 0.72]))]
    (comparison,) = lr_sweep.against_reference(cells, (0.538, 0.462))
    assert comparison["learning_rate"] == 1e-4 and comparison["n"] == 2  # seed 3's pair dropped
    assert comparison["gain"] == pytest.approx(0.095) and comparison["collapsed"] == {"better": 0, "worse": 1}
    cells[0]["seeds"] = [1, 2]  # unequal seeds: no pairing
    assert lr_sweep.against_reference(cells, ()) == []


def test_brown_genres_map_the_corpus_categories_to_three_labels():
    assert [own_data_tasks.genre_of(c) for c in "abcjklmnprdefgh"] == (
        ["press"] * 3 + ["learned"] + ["fiction"] * 6 + [None] * 5)


@pytest.mark.slow
def test_the_tasks_are_balanced_files_of_real_sentences_with_dev_apart(real_data, tmp_path):
    data_dir = os.path.dirname(real_data["movie_reviews"])  # make data's folder
    movie = own_data_tasks.write_task("movie_sentiment", data_dir, str(tmp_path / "movie"))
    with open(movie["train"], newline="", encoding="utf-8") as reader:
        rows = list(csv.DictReader(reader))
    assert len(rows) == own_data_tasks.MOVIE_TRAIN and {r["label"] for r in rows} == {"negative", "positive"}
    brown = own_data_tasks.write_task("brown_genre", data_dir, str(tmp_path / "brown"))
    splits = {}
    for split, path in brown.items():
        with open(path, encoding="utf-8") as reader:
            splits[split] = [json.loads(line) for line in reader]
    assert len(splits["dev"]) == 3 * own_data_tasks.BROWN_DEV_PER_LABEL
    assert lr_sweep.label_counts(brown["train"]) == {
        genre: own_data_tasks.BROWN_TRAIN_PER_LABEL for genre in own_data_tasks.BROWN_GENRES}
    # dev sentences come from other documents: none of them is a training sentence
    assert not {r["text"] for r in splits["dev"]} & {r["text"] for r in splits["train"]}


def test_the_sweep_renders_into_the_docs_with_collapses_and_pairings(tmp_path, monkeypatch):
    rates = (0.538, 0.462)
    cells = [dict(learning_rate=rate, train_steps=100, batch_size=32, seeds=[1, 2, 3],
                  **lr_sweep.cell_summary(scores, rates))
             for rate, scores in ((3e-4, [0.462, 0.538, 0.462]), (1e-4, [0.70, 0.71, 0.72]))]
    source = {"command": "python -m albert_tf.demo.lr_sweep", "date": "2026-11-29T02:00Z",
              "cpu": {"model": "Test CPU", "cores": 2, "isa": {"avx2": True}}, "load_average_at_start": 3.0,
              "settings": {"max_seq_length": 64, "precision": "float32", "warmup": "a tenth of the steps",
                           "seeds": [1, 2, 3], "init_checkpoint": "demo_output/pretraining/model.ckpt-1000"},
              "seconds": {"runs": 6, "median_run": 300},
              "tasks": {"movie_sentiment": {
                  "format": "csv", "train_examples": 2000, "dev_label_counts": {"negative": 538, "positive": 462},
                  "majority_rate": 0.538, "cells": cells,
                  "against_reference": lr_sweep.against_reference(cells, rates),
                  "best": lr_sweep.best_cell(cells)}}}
    path = tmp_path / "lr_sweep.json"
    path.write_text(json.dumps(source))
    monkeypatch.setattr(docs_results, "LR_SWEEP", str(path))
    text = docs_results.render_lr_sweep("")
    assert "| 32 | 100 | 71.0 ± 0.6 | all 3 collapsed |" in text  # rates ascending
    assert "| batch | steps | lr 1e-4 | lr 3e-4 |" in text
    assert "lr 1e-4 against 3e-4, 100 steps, batch 32: n/a points over 0 paired seeds" in text
    assert "Best cell with no run collapsed: lr 1e-4, 100 steps, batch 32: 71.0 ± 0.6." in text
    assert "load average 3.0 at the start" in text
    assert math.isclose(source["tasks"]["movie_sentiment"]["best"]["mean"], 0.71)
