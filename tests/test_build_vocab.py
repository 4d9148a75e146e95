"""build_vocab.py and albert_tf.text.vocab: the ALBERT id layout, preprocessing, clear errors."""

import os

import pytest
import sentencepiece as spm

from albert_tf.text import vocab
from tests.conftest import run_python

USER_SYMBOLS = ["(", ")", "\"", "-", ".", "–", "£", "€"]


def _run_build_vocab(*flags):
    return run_python(["build_vocab.py", *flags], check=False, timeout=600)


@pytest.mark.slow
def test_build_vocab_script_gives_the_albert_layout(real_data, tmp_path):
    prefix = str(tmp_path / "out" / "brown-1k")
    shard = real_data["brown"][0]
    result = _run_build_vocab(f"--input={shard}", f"--model_prefix={prefix}", "--vocab_size=1000",
                              "--spm_options=num_threads=2")
    assert result.returncode == 0, result.stderr
    sp = spm.SentencePieceProcessor(model_file=prefix + ".model")
    assert sp.get_piece_size() == 1000
    pieces = [sp.id_to_piece(i) for i in range(13)]
    assert pieces == ["<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]"] + USER_SYMBOLS
    assert sp.bos_id() == -1 and sp.eos_id() == -1
    assert all(sp.is_control(i) for i in (2, 3, 4))
    # Trained on preprocess_text(line, lower=True): no upper-case piece was learnt.
    learnt = [sp.id_to_piece(i) for i in range(13, sp.get_piece_size())]
    assert not any(any(c.isupper() for c in piece) for piece in learnt)
    with open(prefix + ".vocab", encoding="utf-8") as handle:
        assert [line.split("\t")[0] for line in handle][:13] == pieces
    assert sorted(os.listdir(tmp_path / "out")) == ["brown-1k.model", "brown-1k.vocab"]


def test_build_vocab_script_errors(tmp_path):
    missing = str(tmp_path / "no-such-dir" / "*.txt")
    result = _run_build_vocab(f"--input=data/botchan.txt,{missing}",
                              f"--model_prefix={tmp_path}/v")
    assert result.returncode != 0
    assert f"--input: no file matches '{missing}'" in result.stderr
    result = _run_build_vocab("--input=data/botchan.txt", f"--model_prefix={tmp_path}/v",
                              "--spm_options=vocab_sise=100")
    assert result.returncode != 0
    assert "unknown SentencePiece trainer option 'vocab_sise'" in result.stderr
    assert not os.path.exists(f"{tmp_path}/v.model")


def test_train_albert_spm_preprocessing_and_overrides(real_data, tmp_path):
    cased = vocab.train_albert_spm([real_data["botchan"]], str(tmp_path / "cased"),
                                   preprocess=True, do_lower_case=False, vocab_size=600,
                                   user_defined_symbols=USER_SYMBOLS + ["[NEW]"])
    sp = spm.SentencePieceProcessor(model_file=cased)
    assert sp.get_piece_size() == 600
    assert sp.id_to_piece(13) == "[NEW]"
    pieces = [sp.id_to_piece(i) for i in range(sp.get_piece_size())]
    assert any(any(c.isupper() for c in p) for p in pieces)
    # preprocess_text drops accents even without lower-casing: no combining marks are learnt.
    assert not any("\u0301" in p or "é" in p for p in pieces)


def test_bad_inputs_are_named(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"no file matches '.*nothing\*\.txt'"):
        vocab.expand_input_patterns(f"{tmp_path}/nothing*.txt")
    with pytest.raises(FileNotFoundError, match="no input files"):
        vocab.expand_input_patterns(" , ")
    with pytest.raises(FileNotFoundError, match="gone.txt"):
        vocab.train_albert_spm([str(tmp_path / "gone.txt")], str(tmp_path / "v"))
    with pytest.raises(ValueError, match=f"{tmp_path}: vocabulary input file is a directory; "
                                         "expected a file"):
        vocab.train_albert_spm([str(tmp_path)], str(tmp_path / "v"))
    (tmp_path / "a.txt").write_text("some text\n")
    with pytest.raises(ValueError, match=r"unknown SentencePiece trainer option\(s\) \['colour'\]"):
        vocab.train_albert_spm([str(tmp_path / "a.txt")], str(tmp_path / "v"), colour=1)
    assert vocab.expand_input_patterns(f"{tmp_path}/a.txt,{tmp_path}/*.txt") == [
        str(tmp_path / "a.txt")] * 2
