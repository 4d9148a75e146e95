"""Every GLUE processor reads a fixture written in its task's official TSV layout."""

import os

import pytest

from albert_tf.glue import processors
from albert_tf.glue.processors import GlueDataError, InputExample


def _write(data_dir, task_dir, name, rows):
    path = os.path.join(data_dir, task_dir, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="") as writer:
        writer.write("".join("\t".join(row) + "\n" for row in rows))
    return path


MNLI_HEADER = ["index", "promptID", "pairID", "genre", "sentence1_binary_parse",
               "sentence2_binary_parse", "sentence1_parse", "sentence2_parse", "sentence1",
               "sentence2", "label1", "gold_label"]


def _mnli_row(index, a, b, label):
    return [str(index), "31193", f"{index}n", "government", "( x )", "( y )", "(ROOT x)",
            "(ROOT y)", a, b, label, label]


def _mnli_test_row(index, a, b):
    return [str(index), "31193", f"{index}n", "government", "( x )", "( y )", "(ROOT x)",
            "(ROOT y)", a, b]


@pytest.fixture
def glue_dir(tmp_path):
    """A tiny GLUE tree: every task, every split, in the official column layouts."""
    d = str(tmp_path)
    _write(d, "MNLI", "train.tsv", [MNLI_HEADER, _mnli_row(0, "Conceptually cream", "Product and geography", "neutral"),
                                    _mnli_row(1, "You know", "You lose", "entailment")])
    _write(d, "MNLI", "dev_matched.tsv", [MNLI_HEADER + ["label2", "label3", "label4", "label5"],
                                          _mnli_row(0, "The new rights", "Everyone loves", "contradiction")[:11]
                                          + ["neutral", "x", "x", "x", "contradiction"]])
    _write(d, "MNLI", "dev_mismatched.tsv", [MNLI_HEADER, _mnli_row(7, "Mismatched a", "Mismatched b", "entailment")])
    _write(d, "MNLI", "test_matched.tsv", [MNLI_HEADER[:10], _mnli_test_row(0, "Test A", "Test B")])
    _write(d, "MNLI", "test_mismatched.tsv", [MNLI_HEADER[:10], _mnli_test_row(5, "Mis test A", "Mis test B")])
    _write(d, "diagnostic", "diagnostic.tsv", [["index", "sentence1", "sentence2"],
                                               ["0", "The cat sat.", "The cat did not sit."]])
    mrpc_header = ["Quality", "#1 ID", "#2 ID", "#1 String", "#2 String"]
    _write(d, "MRPC", "train.tsv", [mrpc_header, ["1", "702876", "702977", "Amrozi accused", "Referring to him"],
                                    ["0", "2108705", "2108831", "Yucaipa owned", "Yucaipa bought"]])
    _write(d, "MRPC", "dev.tsv", [mrpc_header, ["1", "1", "2", "He said", "He told"]])
    _write(d, "MRPC", "test.tsv", [["index"] + mrpc_header[1:], ["0", "1089874", "1089925", "PCCW's chief", "Current Chief"]])
    _write(d, "CoLA", "train.tsv", [["gj04", "1", "", "Our friends won't buy this analysis."],
                                    ["gj04", "0", "*", "One more pseudo generalization and I'm giving up."]])
    _write(d, "CoLA", "dev.tsv", [["gj04", "1", "", "The sailors rode the breeze clear of the rocks."]])
    _write(d, "CoLA", "test.tsv", [["id", "sentence"], ["0", "Bill whistled past the house."]])
    _write(d, "SST-2", "train.tsv", [["sentence", "label"], ["hide new secretions", "0"], ["contains no wit", "0"],
                                     ["that loves its characters", "1"]])
    _write(d, "SST-2", "dev.tsv", [["sentence", "label"], ["it 's a charming journey", "1"]])
    _write(d, "SST-2", "test.tsv", [["index", "sentence"], ["0", "uneasy mishmash of styles"]])
    stsb_header = ["index", "genre", "filename", "year", "old_index", "source1", "source2", "sentence1", "sentence2"]
    _write(d, "STS-B", "train.tsv", [stsb_header + ["score"],
                                     ["0", "main-captions", "MSRvid", "2012test", "0001", "none", "none",
                                      "A plane is taking off.", "An air plane is taking off.", "5.000"],
                                     ["1", "main-captions", "MSRvid", "2012test", "0004", "none", "none",
                                      "A man is playing a flute.", "A man is playing a bamboo flute.", "3.800"]])
    _write(d, "STS-B", "dev.tsv", [stsb_header + ["score"],
                                   ["0", "main-captions", "MSRvid", "2012test", "0000", "none", "none",
                                    "A man with a hard hat is dancing.", "A man wearing a hard hat is dancing.", "5.000"]])
    _write(d, "STS-B", "test.tsv", [stsb_header, ["0", "main-captions", "MSRvid", "2012test", "0024", "none", "none",
                                                  "A girl is styling her hair.", "A girl is brushing her hair."]])
    qqp_header = ["id", "qid1", "qid2", "question1", "question2", "is_duplicate"]
    _write(d, "QQP", "train.tsv", [qqp_header, ["133273", "213221", "213222", "How is the life?", "How is life?", "0"],
                                   ["402555", "536040", "536041", "How do I control my", "ok"],  # broken by a newline
                                   ["horny emotions?", "How do you control your horniness?", "1"],
                                   ["360472", "364011", "490273", "What causes stool color?", "What can cause stool?", "1"]])
    _write(d, "QQP", "dev.tsv", [qqp_header, ["1", "2", "3", "Why?", "Why not?", "0"]])
    _write(d, "QQP", "test.tsv", [["id", "question1", "question2"], ["0", "Why do rockets look white?", "Why are rockets white?"]])
    for task, labels in (("QNLI", ("entailment", "not_entailment")), ("RTE", ("not_entailment", "entailment")),
                         ("WNLI", ("1", "0"))):
        first, second = ("question", "sentence") if task == "QNLI" else ("sentence1", "sentence2")
        _write(d, task, "train.tsv", [["index", first, second, "label"], ["0", f"{task} a0", f"{task} b0", labels[0]],
                                      ["1", f"{task} a1", f"{task} b1", labels[1]]])
        _write(d, task, "dev.tsv", [["index", first, second, "label"], ["0", f"{task} dev a", f"{task} dev b", labels[1]]])
        _write(d, task, "test.tsv", [["index", first, second], ["0", f"{task} test a", f"{task} test b"]])
    return d


def _read(task, data_dir, split, use_spm=False, do_lower_case=False):
    processor = processors.get_processor(task, use_spm=use_spm, do_lower_case=do_lower_case)
    return processor, getattr(processor, f"get_{split}_examples")(data_dir)


EXPECTED = {
    ("mnli", "train"): [InputExample("0", "Conceptually cream", "Product and geography", "neutral"),
                        InputExample("1", "You know", "You lose", "entailment")],
    ("mnli", "dev"): [InputExample("0", "The new rights", "Everyone loves", "contradiction")],
    ("mnli", "test"): [InputExample("0", "Test A", "Test B", "contradiction")],
    ("mismnli", "dev"): [InputExample("7", "Mismatched a", "Mismatched b", "entailment")],
    ("mismnli", "test"): [InputExample("5", "Mis test A", "Mis test B", "contradiction")],
    ("ax", "test"): [InputExample("0", "The cat sat.", "The cat did not sit.", "contradiction")],
    ("mrpc", "train"): [InputExample("train-1", "Amrozi accused", "Referring to him", "1"),
                        InputExample("train-2", "Yucaipa owned", "Yucaipa bought", "0")],
    ("mrpc", "dev"): [InputExample("dev-1", "He said", "He told", "1")],
    ("mrpc", "test"): [InputExample("0", "PCCW's chief", "Current Chief", "0")],
    ("cola", "train"): [InputExample("train-0", "Our friends won't buy this analysis.", None, "1"),
                        InputExample("train-1", "One more pseudo generalization and I'm giving up.", None, "0")],
    ("cola", "dev"): [InputExample("dev-0", "The sailors rode the breeze clear of the rocks.", None, "1")],
    ("cola", "test"): [InputExample("0", "Bill whistled past the house.", None, "0")],
    ("sst-2", "train"): [InputExample("train-1", "hide new secretions", None, "0"),
                         InputExample("train-2", "contains no wit", None, "0"),
                         InputExample("train-3", "that loves its characters", None, "1")],
    ("sst-2", "dev"): [InputExample("dev-1", "it 's a charming journey", None, "1")],
    ("sst-2", "test"): [InputExample("0", "uneasy mishmash of styles", None, "0")],
    ("sts-b", "train"): [InputExample("0", "A plane is taking off.", "An air plane is taking off.", 5.0),
                         InputExample("1", "A man is playing a flute.", "A man is playing a bamboo flute.", 3.8)],
    ("sts-b", "dev"): [InputExample("0", "A man with a hard hat is dancing.", "A man wearing a hard hat is dancing.", 5.0)],
    ("sts-b", "test"): [InputExample("0", "A girl is styling her hair.", "A girl is brushing her hair.", 0.0)],
    ("qqp", "train"): [InputExample("133273", "How is the life?", "How is life?", "0"),
                       InputExample("360472", "What causes stool color?", "What can cause stool?", "1")],
    ("qqp", "dev"): [InputExample("1", "Why?", "Why not?", "0")],
    ("qqp", "test"): [InputExample("0", "Why do rockets look white?", "Why are rockets white?", "0")],
    ("qnli", "train"): [InputExample("0", "QNLI a0", "QNLI b0", "entailment"),
                        InputExample("1", "QNLI a1", "QNLI b1", "not_entailment")],
    ("qnli", "test"): [InputExample("0", "QNLI test a", "QNLI test b", "entailment")],
    ("rte", "dev"): [InputExample("0", "RTE dev a", "RTE dev b", "entailment")],
    ("rte", "test"): [InputExample("0", "RTE test a", "RTE test b", "entailment")],
    ("wnli", "train"): [InputExample("0", "WNLI a0", "WNLI b0", "1"), InputExample("1", "WNLI a1", "WNLI b1", "0")],
    ("wnli", "test"): [InputExample("0", "WNLI test a", "WNLI test b", "0")],
}


@pytest.mark.parametrize("task,split", sorted(EXPECTED))
def test_processor_reads_official_layout(glue_dir, task, split):
    _, examples = _read(task, glue_dir, split)
    assert examples == EXPECTED[(task, split)]


def test_mismnli_trains_on_mnli_train(glue_dir):
    _, examples = _read("mismnli", glue_dir, "train")
    assert examples == EXPECTED[("mnli", "train")]


def test_labels_and_regression():
    assert processors.get_processor("MNLI").get_labels() == ["contradiction", "entailment", "neutral"]
    assert processors.get_processor("ax").get_labels() == ["contradiction", "entailment", "neutral"]
    assert processors.get_processor("qnli").get_labels() == ["entailment", "not_entailment"]
    assert processors.get_processor("rte").get_labels() == ["entailment", "not_entailment"]
    for task in ("cola", "sst-2", "mrpc", "qqp", "wnli"):
        assert processors.get_processor(task).get_labels() == ["0", "1"]
    stsb = processors.get_processor("sts-b")
    assert stsb.get_labels() == [None] and stsb.is_regression
    assert not processors.get_processor("cola").is_regression


def test_qqp_malformed_rows_skipped_and_counted(glue_dir, caplog):
    processor, examples = _read("qqp", glue_dir, "train")
    assert len(examples) == 2
    assert processor.skipped_rows == {"train": 2}


def test_spm_mode_normalises_every_field_guids_included(glue_dir, tmp_path):
    path = _write(str(tmp_path), "SST-2", "test.tsv", [["index", "sentence"], ["ID7", "  Café   Déjà  VU "]])
    _, examples = _read("sst-2", str(tmp_path), "test", use_spm=True, do_lower_case=True)
    assert os.path.exists(path)
    assert examples == [InputExample("id7", "cafe deja vu", None, "0")]
    _, cased = _read("sst-2", str(tmp_path), "test", use_spm=True, do_lower_case=False)
    assert cased == [InputExample("ID7", "Cafe Deja VU", None, "0")]
    _, wordpiece = _read("sst-2", str(tmp_path), "test", use_spm=False, do_lower_case=True)
    assert wordpiece == [InputExample("ID7", "  Café   Déjà  VU ", None, "0")]


def test_crlf_files(tmp_path):
    path = os.path.join(tmp_path, "SST-2", "train.tsv")
    os.makedirs(os.path.dirname(path))
    with open(path, "wb") as writer:
        writer.write(b"sentence\tlabel\r\ngood film\t1\r\nbad film\t0\r\n")
    _, examples = _read("sst-2", str(tmp_path), "train")
    assert examples == [InputExample("train-1", "good film", None, "1"),
                        InputExample("train-2", "bad film", None, "0")]


def test_no_quote_handling(tmp_path):
    _write(str(tmp_path), "SST-2", "train.tsv", [["sentence", "label"], ['"a quoted\tstart', "1"]])
    with pytest.raises(GlueDataError):  # the tab inside quotes splits the row: 3 columns, label 'start'
        _read("sst-2", str(tmp_path), "train")
    _write(str(tmp_path), "SST-2", "train.tsv", [["sentence", "label"], ['"a quoted" film', "1"]])
    _, examples = _read("sst-2", str(tmp_path), "train")
    assert examples[0].text_a == '"a quoted" film'


def test_too_few_columns_names_file_line_and_column(glue_dir):
    path = _write(glue_dir, "RTE", "train.tsv", [["index", "sentence1", "sentence2", "label"],
                                                 ["0", "a", "b", "entailment"], ["1", "only a sentence"]])
    with pytest.raises(GlueDataError, match=rf"{path}, line 3, column 3: sentence2 is missing"):
        _read("rte", glue_dir, "train")


def test_unknown_label_names_file_line_and_column(glue_dir):
    path = _write(glue_dir, "MRPC", "train.tsv", [["Quality", "#1 ID", "#2 ID", "#1 String", "#2 String"],
                                                  ["1", "1", "2", "a", "b"], ["yes", "1", "2", "a", "b"]])
    with pytest.raises(GlueDataError, match=rf"{path}, line 3, column 1: unknown label 'yes', expected one of \['0', '1'\]"):
        _read("mrpc", glue_dir, "train")
    path = _write(glue_dir, "MNLI", "train.tsv", [MNLI_HEADER, _mnli_row(0, "a", "b", "maybe")])
    with pytest.raises(GlueDataError, match=rf"{path}, line 2, column 12: unknown label 'maybe'"):
        _read("mnli", glue_dir, "train")


def test_bad_stsb_score(glue_dir):
    path = _write(glue_dir, "STS-B", "dev.tsv", [["h"] * 10, ["0", "g", "f", "y", "o", "s", "s", "a", "b", "high"]])
    with pytest.raises(GlueDataError, match=rf"{path}, line 2, column 10: score 'high' is not a number"):
        _read("sts-b", glue_dir, "dev")


def test_missing_file_and_split(tmp_path):
    with pytest.raises(GlueDataError, match=r"CoLA/train.tsv: train file of CoLA does not exist"):
        _read("cola", str(tmp_path), "train")
    with pytest.raises(GlueDataError, match="has no train split"):
        _read("ax", str(tmp_path), "train")


def test_unknown_task_lists_valid_names():
    with pytest.raises(GlueDataError) as error:
        processors.get_processor("sst2")
    message = str(error.value)
    assert "'sst2'" in message
    for name in ("ax", "cola", "mismnli", "mnli", "mrpc", "qnli", "qqp", "rte", "sst-2", "sts-b", "wnli"):
        assert name in message
    assert isinstance(processors.get_processor("SST-2"), processors.Sst2Processor)


def test_stsb_row_without_score(glue_dir):
    path = _write(glue_dir, "STS-B", "train.tsv", [["h"] * 10, ["0", "g", "f", "y", "o", "s", "s", "a", "b"]])
    with pytest.raises(GlueDataError, match=rf"{path}, line 2, column 10: score is missing"):
        _read("sts-b", glue_dir, "train")
