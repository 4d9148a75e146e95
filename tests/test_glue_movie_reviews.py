"""The movie-review sentences written as SST-2 and STS-B tasks, read back by the processors."""

import collections
import os

import pytest

from albert_tf.glue import movie_reviews, processors


def _source_scores(path):
    scores = {}
    with open(path, encoding="utf-8") as reader:
        for line in reader:
            review_id, score, _ = line.rstrip("\r\n").split("\t", 2)
            scores[review_id] = float(score)
    return scores


def test_sst2_from_real_movie_reviews(real_data, tmp_path):
    out = str(tmp_path / "SST-2")
    paths = movie_reviews.write_sst2_task(real_data["movie_reviews"], out)
    assert sorted(paths) == ["dev", "test", "train"]
    processor = processors.get_processor("sst-2", use_spm=False)
    train = processor.get_train_examples(str(tmp_path))
    dev = processor.get_dev_examples(str(tmp_path))
    test = processor.get_test_examples(str(tmp_path))
    # data_sources.md: 4,982 sentences score > 0.5 and 5,061 < -0.5
    labels = collections.Counter(e.label for e in train + dev)
    scores = _source_scores(real_data["movie_reviews"])
    test_labels = collections.Counter(movie_reviews.sst2_label(scores[e.guid]) for e in test)
    assert labels["1"] + test_labels["1"] == 4982
    assert labels["0"] + test_labels["0"] == 5061
    assert None not in test_labels
    total = len(train) + len(dev) + len(test)
    assert 0.07 < len(dev) / total < 0.13 and 0.07 < len(test) / total < 0.13
    assert all(movie_reviews.split_of(e.guid) == "test" for e in test)
    with open(paths["train"], encoding="utf-8") as reader:
        assert reader.readline() == "sentence\tlabel\n"
    with open(paths["test"], encoding="utf-8") as reader:
        assert reader.readline() == "index\tsentence\n"


def test_writers_are_idempotent(real_data, tmp_path):
    out = str(tmp_path / "SST-2")
    paths = movie_reviews.write_sst2_task(real_data["movie_reviews"], out)
    stamps = {k: os.stat(p).st_mtime_ns for k, p in paths.items()}
    contents = {k: open(p, "rb").read() for k, p in paths.items()}
    with open(paths["dev"], "a") as writer:
        writer.write("tampered\t1\n")
    movie_reviews.write_sst2_task(real_data["movie_reviews"], out)
    assert {k: open(p, "rb").read() for k, p in paths.items()} == contents
    assert os.stat(paths["train"]).st_mtime_ns == stamps["train"]
    assert sorted(os.listdir(out)) == ["dev.tsv", "test.tsv", "train.tsv"]


def test_stsb_from_real_movie_reviews(real_data, tmp_path):
    movie_reviews.write_stsb_task(real_data["movie_reviews"], str(tmp_path / "STS-B"))
    processor = processors.get_processor("sts-b", use_spm=False)
    train = processor.get_train_examples(str(tmp_path))
    dev = processor.get_dev_examples(str(tmp_path))
    test = processor.get_test_examples(str(tmp_path))
    assert len(train) + len(dev) + len(test) == 10605
    scores = _source_scores(real_data["movie_reviews"])
    by_text = {}
    with open(real_data["movie_reviews"], encoding="utf-8") as reader:
        for line in reader:
            review_id, _, text = line.rstrip("\r\n").split("\t", 2)
            by_text[" ".join(text.split())] = review_id
    for example in train[:50] + dev[:50]:
        assert example.text_b == ""
        assert example.label == pytest.approx((scores[by_text[example.text_a]] + 4) * 5 / 8, abs=1e-6)
    assert all(0.0 <= e.label <= 5.0 for e in train + dev)
    assert all(e.label == 0.0 and e.guid in scores for e in test)


def test_crlf_source_and_errors(tmp_path):
    source = tmp_path / "reviews.tsv"
    source.write_bytes(b"1\t2.5\tA fine\tfilm\r\n2\t-3\tAwful\r\n3\t0.1\tMeh\r\n")
    reviews = movie_reviews.read_reviews(str(source))
    assert [(r.id, r.score, r.text) for r in reviews] == [("1", 2.5, "A fine film"), ("2", -3.0, "Awful"),
                                                          ("3", 0.1, "Meh")]
    source.write_bytes(b"1\t2.5\tgood\n2\tbad-score\ttext\n")
    with pytest.raises(movie_reviews.MovieReviewsError, match=r"reviews.tsv, line 2, column 2: score 'bad-score'"):
        movie_reviews.read_reviews(str(source))
    source.write_bytes(b"1\t9\tgood\n")
    with pytest.raises(movie_reviews.MovieReviewsError, match=r"line 1, column 2: score 9.0 is outside"):
        movie_reviews.read_reviews(str(source))
    source.write_bytes(b"1\tonly two\n")
    with pytest.raises(movie_reviews.MovieReviewsError, match=r"line 1: expected 'id<TAB>score<TAB>text'"):
        movie_reviews.read_reviews(str(source))


def test_rows_are_mixed_for_a_small_shuffle_buffer(real_data, tmp_path):
    """The source lists positives first; a 100-record shuffle buffer needs both labels nearby."""
    movie_reviews.write_sst2_task(real_data["movie_reviews"], str(tmp_path / "SST-2"))
    train = processors.get_processor("sst-2", use_spm=False).get_train_examples(str(tmp_path))
    for start in range(0, len(train) - 100, 100):
        window = collections.Counter(e.label for e in train[start:start + 100])
        assert 20 <= window["1"] <= 80, (start, window)


def _task_command(*argv):
    from absl import flags
    from albert_tf.glue import movie_reviews_task
    flag_values = flags.FlagValues()
    movie_reviews_task.define_flags(flag_values)
    flag_values(["movie_reviews_task", *argv])
    return movie_reviews_task.run, flag_values


@pytest.mark.parametrize("task_name, folder", [("sst-2", "SST-2"), ("sts-b", "STS-B")])
def test_the_task_command_writes_what_run_classifier_reads(real_data, tmp_path, task_name, folder):
    """`python -m albert_tf.glue.movie_reviews_task` (the README's first command) writes the
    library's files into --output_dir, which run_classifier's processor reads from its parent."""
    run, flag_values = _task_command(f"--movie_reviews_file={real_data['movie_reviews']}",
                                     f"--task_name={task_name}",
                                     f"--output_dir={tmp_path / 'glue_data' / folder}")
    run(flag_values)
    writer = {"sst-2": movie_reviews.write_sst2_task, "sts-b": movie_reviews.write_stsb_task}
    expected = writer[task_name](real_data["movie_reviews"], str(tmp_path / "reference"))
    for split, path in expected.items():
        with open(path, encoding="utf-8") as want, open(
                tmp_path / "glue_data" / folder / f"{split}.tsv", encoding="utf-8") as got:
            assert got.read() == want.read(), split
    processor = processors.get_processor(task_name, use_spm=False)
    assert len(processor.get_dev_examples(str(tmp_path / "glue_data"))) > 900


def test_the_task_command_refuses_a_missing_file_and_writes_nothing(tmp_path):
    from albert_tf import errors
    run, flag_values = _task_command(f"--movie_reviews_file={tmp_path / 'absent.tsv'}",
                                     f"--output_dir={tmp_path / 'out'}")
    with pytest.raises(errors.UserInputError, match=r"absent.tsv: movie reviews file not found"):
        run(flag_values)
    assert not (tmp_path / "out").exists()
