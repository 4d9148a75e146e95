"""run_classifier.py on a user's own CSV, TSV and JSON Lines files (--train_file and friends).

The files are made from the movie-review sentences (real text, real scores): a 3-label task
(negative / neutral / positive by the review's score) and the score itself as a regression
task. Each format goes from training through evaluation and export to an answer served by
serve.py with the label names; every bad input is refused before training with the file,
line and column named, and nothing written.
"""

import csv
import json
import os

import pytest

from albert_tf.config import AlbertConfig
from albert_tf.glue import movie_reviews, own_files
from tests.conftest import run_python

SEQ = 32
LABELS = ("negative", "neutral", "positive")


def _label(score):
    return "negative" if score < -0.5 else "positive" if score > 0.5 else "neutral"


@pytest.fixture(scope="module")
def reviews(real_data):
    rows = [(review.text, review.score) for review in movie_reviews.read_reviews(
        real_data["movie_reviews"])]
    return {"train": rows[:600], "dev": rows[600:700], "test": rows[700:740]}


def _write(path, rows, kind, label=True, regression=False):
    header = ["sentence", "label"] if label else ["sentence"]
    records = [[text, (f"{score:.4f}" if regression else _label(score))][:len(header)]
               for text, score in rows]
    if kind == "jsonl":
        with open(path, "w", encoding="utf-8") as writer:
            for record in records:
                writer.write(json.dumps(dict(zip(header, record))) + "\n")
        return path
    with open(path, "w", encoding="utf-8", newline="") as writer:
        if kind == "csv":
            csv.writer(writer).writerows([header] + records)
        else:
            writer.writelines("\t".join(record) + "\n" for record in [header] + records)
    return path


@pytest.fixture(scope="module")
def config_file(spm_model_file, tmp_path_factory):
    vocab_size = sum(1 for _ in open(spm_model_file[:-len(".model")] + ".vocab", encoding="utf-8"))
    path = str(tmp_path_factory.mktemp("config") / "albert_config.json")
    AlbertConfig.from_dict({"vocab_size": vocab_size, "embedding_size": 16, "hidden_size": 32,
                            "num_hidden_layers": 2, "num_attention_heads": 4,
                            "intermediate_size": 37, "max_position_embeddings": SEQ}
                           ).to_json_file(path)
    return path


def _train_and_serve(tmp_path, reviews, config_file, spm_model_file, kind, regression=False):
    files = {split: _write(str(tmp_path / f"{split}.{kind}"), rows, kind, label=split != "test",
                           regression=regression) for split, rows in reviews.items()}
    output_dir, export_dir = str(tmp_path / "out"), str(tmp_path / "export")
    run_python(["run_classifier.py", f"--train_file={files['train']}",
                f"--validation_file={files['dev']}", f"--test_file={files['test']}",
                "--text_column_names=sentence", f"--output_dir={output_dir}",
                f"--albert_config_file={config_file}", f"--spm_model_file={spm_model_file}",
                "--allow_random_init", "--do_train", "--do_eval", "--do_predict",
                f"--export_dir={export_dir}", f"--max_seq_length={SEQ}", "--train_batch_size=16",
                "--train_step=20", "--save_checkpoints_steps=20", "--iterations_per_loop=20",
                "--learning_rate=1e-4", "--seed=1"] + (["--do_regression"] if regression else []))
    served = run_python(["serve.py", f"--export_dir={export_dir}",
                         f"--text={reviews['test'][0][0]}"])
    answers = [json.loads(line) for line in served.stdout.splitlines() if line.startswith("{")]
    return output_dir, answers


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["csv", "tsv", "jsonl"])
def test_a_three_label_file_trains_evaluates_predicts_and_serves_label_names(
        kind, tmp_path, reviews, config_file, spm_model_file):
    output_dir, answers = _train_and_serve(tmp_path, reviews, config_file, spm_model_file, kind)
    with open(os.path.join(output_dir, own_files.LABEL_NAMES_FILE), encoding="utf-8") as reader:
        assert reader.read().split() == list(LABELS)  # inferred from training, sorted
    with open(os.path.join(output_dir, "eval_results.txt"), encoding="utf-8") as reader:
        assert "eval_accuracy = " in reader.read()
    with open(os.path.join(output_dir, "submit_results.tsv"), encoding="utf-8") as reader:
        submitted = [line.rstrip("\n").split("\t") for line in reader][1:]
    assert len(submitted) == len(reviews["test"]) and {row[1] for row in submitted} <= set(LABELS)
    assert len(answers) == 1 and answers[0]["label"] in LABELS
    assert len(answers[0]["probabilities"]) == 3


@pytest.mark.slow
def test_a_regression_csv_is_scored_as_sts_b_and_served_as_a_score(
        tmp_path, reviews, config_file, spm_model_file):
    output_dir, answers = _train_and_serve(tmp_path, reviews, config_file, spm_model_file, "csv",
                                           regression=True)
    with open(os.path.join(output_dir, "eval_results.txt"), encoding="utf-8") as reader:
        names = {line.split(" = ")[0] for line in reader}
    assert {"pearson", "spearman", "MSE"} <= names
    assert len(answers) == 1 and isinstance(answers[0]["label"], float)


@pytest.mark.slow
def test_from_preset_on_the_run_s_output_folder_predicts_as_the_script(
        tmp_path, reviews, config_file, spm_model_file):
    """The output folder carries the run's SentencePiece model, labels, length and casing beside
    its checkpoints: AlbertTextClassifier.from_preset(output_dir) gives the script's own test
    probabilities and labels (model.ckpt-best, the same truncation to --max_seq_length)."""
    import numpy as np
    import tensorflow as tf

    import albert_tf
    files = {split: _write(str(tmp_path / f"{split}.csv"), rows, "csv", label=split != "test")
             for split, rows in reviews.items()}
    longer = str(tmp_path / "albert_config.json")  # room beyond --max_seq_length: it must be recorded
    AlbertConfig.from_dict(dict(AlbertConfig.from_json_file(config_file).to_dict(),
                                max_position_embeddings=2 * SEQ)).to_json_file(longer)
    output_dir = str(tmp_path / "out")
    run_python(["run_classifier.py", f"--train_file={files['train']}",
                f"--validation_file={files['dev']}", f"--test_file={files['test']}",
                "--text_column_names=sentence", f"--output_dir={output_dir}",
                f"--albert_config_file={longer}", f"--spm_model_file={spm_model_file}",
                "--allow_random_init", "--do_train", "--do_eval", "--do_predict",
                f"--max_seq_length={SEQ}", "--train_batch_size=16", "--train_step=20",
                "--save_checkpoints_steps=20", "--iterations_per_loop=20", "--learning_rate=1e-3",
                "--seed=1"])
    texts = [text for text, _ in reviews["test"]]
    assert max(len(text.split()) for text in texts) > SEQ  # truncation decides some predictions
    model = albert_tf.AlbertTextClassifier.from_preset(output_dir)
    assert model.label_names == list(LABELS) and model.preprocessor.max_seq_length == SEQ
    with open(os.path.join(output_dir, "test_results.tsv"), encoding="utf-8") as reader:
        script_probabilities = np.array([[float(p) for p in line.split("\t")] for line in reader])
    with open(os.path.join(output_dir, "submit_results.tsv"), encoding="utf-8") as reader:
        script_labels = [line.rstrip("\n").split("\t")[1] for line in reader][1:]
    np.testing.assert_allclose(tf.nn.softmax(model.predict(texts, verbose=0)).numpy(),
                               script_probabilities, atol=1e-5)
    assert model.predict_labels(texts) == script_labels


def _data(tmp_path, train_text, dev_text=None, name="train.csv", **options):
    train = tmp_path / name
    train.write_text(train_text, encoding="utf-8")
    dev = None
    if dev_text is not None:
        dev = tmp_path / ("dev" + os.path.splitext(name)[1])
        dev.write_text(dev_text, encoding="utf-8")
    return own_files.OwnData(str(train), dev and str(dev), None, **options), str(train)


BAD_INPUTS = {
    "missing column": ("text,label\nfine,a\n", None, {"text_columns": ("sentence",)},
                       "line 2: no column 'sentence'"),
    "empty text": ("text,label\nfine,a\n\"  \",b\n", None, {}, "line 3, column 'text': empty text"),
    "unseen label": ("text,label\nfine,a\nbad,b\n", "text,label\nok,c\n", {},
                     "line 2, column 'label': label 'c' is not one of the labels ['a', 'b']"),
    "non-numeric regression label": ("text,label\nfine,0.5\nbad,high\n", None,
                                     {"regression": True},
                                     "line 3, column 'label': label 'high' is not a number"),
    "ragged row": ("text,label\nfine,a\nbad,b,extra\n", None, {},
                   "line 3: 3 fields, the header has 2"),
}


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_input_is_refused_naming_file_line_and_column(case, tmp_path):
    train_text, dev_text, options, expected = BAD_INPUTS[case]
    data, train = _data(tmp_path, train_text, dev_text, **options)
    with pytest.raises(own_files.OwnDataError) as raised:
        own_files.check_files(data, ["train", "dev"] if dev_text else ["train"])
    assert expected in str(raised.value)
    assert ("dev.csv" if case == "unseen label" else train) in str(raised.value)


def test_an_unknown_extension_is_refused_with_the_formats(tmp_path):
    data, train = _data(tmp_path, "text,label\nfine,a\n", name="train.xlsx")
    with pytest.raises(own_files.OwnDataError, match="unknown extension '.xlsx'; expected one of "
                       r"\.csv, \.json, \.jsonl, \.tsv"):
        own_files.check_files(data, ["train"])


def test_csv_quoting_tsv_and_json_lines_read_the_same_rows(tmp_path):
    rows = [("a \"quoted\", comma text", "x"), ("plain", "y")]
    expected = [{"text": text, "label": label} for text, label in rows]
    for kind in ("csv", "tsv", "jsonl"):
        path = str(tmp_path / f"f.{kind}")
        with open(path, "w", encoding="utf-8", newline="") as writer:
            if kind == "csv":
                csv.writer(writer).writerows([("text", "label")] + rows)
            elif kind == "tsv":
                writer.writelines("\t".join(row) + "\n" for row in [("text", "label")] + rows)
            else:
                writer.writelines(json.dumps(row) + "\n" for row in expected)
        assert [row for _, row in own_files.read_rows(path)] == expected, kind


def test_labels_are_the_training_files_sorted_or_the_flag_s_in_its_order(tmp_path):
    data, _ = _data(tmp_path, "text,label\na,pos\nb,neg\nc,neu\nd,pos\n")
    assert own_files.training_labels(data) == ("neg", "neu", "pos")
    ordered, _ = _data(tmp_path, "text,label\na,pos\n", label_names=("pos", "neg"))
    assert own_files.training_labels(ordered) == ("pos", "neg")


@pytest.mark.slow
@pytest.mark.parametrize("case", ["unseen label", "unknown extension"])
def test_the_script_exits_non_zero_naming_the_culprit_and_writes_nothing(
        case, tmp_path, config_file, spm_model_file):
    name = "train.xlsx" if case == "unknown extension" else "train.csv"
    train_text, dev_text = (BAD_INPUTS["unseen label"][:2] if case == "unseen label"
                            else ("text,label\nfine,a\n", None))
    data, train = _data(tmp_path, train_text, dev_text, name=name)
    output_dir = tmp_path / "out"
    flags_ = [f"--train_file={train}", f"--output_dir={output_dir}", "--do_train",
              f"--albert_config_file={config_file}", f"--spm_model_file={spm_model_file}",
              "--allow_random_init", f"--max_seq_length={SEQ}", "--train_step=2"]
    if data.validation_file:
        flags_ += [f"--validation_file={data.validation_file}", "--do_eval"]
    result = run_python(["run_classifier.py"] + flags_, check=False, timeout=120)
    assert result.returncode != 0
    culprit = "dev.csv, line 2" if case == "unseen label" else "train.xlsx: unknown extension"
    assert culprit in result.stderr
    assert not output_dir.exists()
