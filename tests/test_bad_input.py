"""Bad input of every kind a user can give, each refused with a message naming the culprit.

Table-driven and in-process where the scripts' library entry points can be called directly
(config, globs, TFRecords, corpora, vocabularies, flags, GLUE/SQuAD/RACE inputs); a few cases run
the real scripts in subprocesses to check the command-line contract: exit status 2 (or absl's 1
for a flag that fails its range check), no signal, a bounded time, one `<script>: error:` line,
and nothing left under a final name.
"""

import json
import os
import logging
import re
import shutil
import struct
import subprocess
import sys
import time

from absl import flags
import pytest
import tensorflow as tf

from albert_tf import config as config_lib, errors
from albert_tf.files import output_lock, tfrecord_check
from albert_tf.text import vocab
from albert_tf.glue import run as glue_run
from albert_tf.pretraining import create_data, file_patterns, input_pipeline
from albert_tf.pretraining import options as options_lib
from albert_tf.race import run as race_run
from albert_tf.scripts import run_squad
from albert_tf.training import flags as training_flags
from tests.conftest import REPO_ROOT

SIZES = {"vocab_size": 4000, "embedding_size": 16, "hidden_size": 32, "num_hidden_layers": 2,
         "num_attention_heads": 4, "intermediate_size": 37, "max_position_embeddings": 64}


def _write(path, data):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))
    return str(path)


def _config_file(tmp_path, name="albert_config.json", **changes):
    fields = dict(SIZES, **changes)
    for key, value in changes.items():
        if value is None:
            fields.pop(key)
    return _write(tmp_path / name, json.dumps(fields))


def _example(length):
    ints = lambda n: tf.train.Feature(int64_list=tf.train.Int64List(value=[1] * n))  # noqa: E731
    floats = tf.train.Feature(float_list=tf.train.FloatList(value=[1.0] * 4))
    features = {"input_ids": ints(length), "input_mask": ints(length),
                "segment_ids": ints(length), "masked_lm_positions": ints(4),
                "masked_lm_ids": ints(4), "masked_lm_weights": floats,
                "next_sentence_labels": ints(1)}
    return tf.train.Example(features=tf.train.Features(feature=features)).SerializeToString()


def _records(path, count=3, length=32):
    path.parent.mkdir(parents=True, exist_ok=True)
    with tf.io.TFRecordWriter(str(path)) as writer:
        for _ in range(count):
            writer.write(_example(length))
    return str(path)


def _corrupt(path, offset, value=b"\xff"):
    data = bytearray(open(path, "rb").read())
    data[offset:offset + len(value)] = value
    open(path, "wb").write(bytes(data))
    return path


def _left_behind(directory):
    """Files under `directory` (recursively); nothing may be left after a refused run."""
    if not os.path.isdir(directory):
        return []
    return sorted(os.path.join(root, name) for root, _, names in os.walk(directory)
                  for name in names)


# ----------------------------------------------------------------------------- configs

CONFIG_CASES = [
    ({"hiden_size": 32}, r"unknown field 'hiden_size'; did you mean 'hidden_size'"),
    ({"num_attention_head": 4}, r"did you mean 'num_attention_heads'"),
    ({"hidden_size": None}, r"required field 'hidden_size' is missing"),
    ({"num_attention_heads": None}, r"required field 'num_attention_heads' is missing"),
    ({"vocab_size": None}, r"required field 'vocab_size' is missing"),
    ({"num_hidden_layers": -2}, r"'num_hidden_layers' must be a positive integer"),
    ({"hidden_dropout_prob": 1.5}, r"'hidden_dropout_prob' must be below 1"),
    ({"hidden_act": "swish"}, r"'hidden_act' must be one of"),
    ({"hidden_size": 30}, r"not a multiple of 'num_attention_heads'"),
    ({"num_hidden_groups": 5}, r"'num_hidden_groups' \(5\) exceeds"),
]


@pytest.mark.parametrize("changes, message", CONFIG_CASES)
def test_bad_config_field(tmp_path, changes, message):
    path = _config_file(tmp_path, **changes)
    with pytest.raises(errors.UserInputError, match=message) as error:
        config_lib.AlbertConfig.from_json_file(path)
    assert path in str(error.value)


@pytest.mark.parametrize("text, message", [
    ("{\"vocab_size\": 10,", r"malformed JSON at line 1"),
    ("[1, 2]", r"expected a JSON object"),
])
def test_config_file_not_a_config(tmp_path, text, message):
    path = _write(tmp_path / "c.json", text)
    with pytest.raises(errors.UserInputError, match=message):
        config_lib.AlbertConfig.from_json_file(path)


def test_released_extra_keys_are_accepted_and_defaulted_sizes_warned(tmp_path, caplog):
    path = _config_file(tmp_path, net_structure_type=0, layers_to_keep=[], gap_size=0,
                        num_memory_blocks=0, intermediate_size=None)
    config = config_lib.AlbertConfig.from_json_file(path)
    assert config.intermediate_size == 16384 and config.layers_to_keep == []
    assert "intermediate_size not given" in caplog.text


def test_vocabulary_larger_than_config_refused():
    config = config_lib.AlbertConfig(**SIZES)
    with pytest.raises(errors.UserInputError, match=r"vocab_size 4000 is smaller than the 30000 "
                                                 r"ids of 30k-clean.model"):
        config.check_vocabulary(30000, "30k-clean.model")
    config.check_vocabulary(4000, "exact.model")


def test_effective_config_written_and_a_different_one_refused(tmp_path):
    config = config_lib.AlbertConfig(**SIZES)
    path = config.write_beside(str(tmp_path))
    assert config_lib.AlbertConfig.from_json_file(path) == config
    config.write_beside(str(tmp_path))  # same config: fine (a resumed run)
    other = config_lib.AlbertConfig(**dict(SIZES, num_hidden_layers=4))
    with pytest.raises(errors.UserInputError, match=r"another model config \(differs in "
                                                 r"num_hidden_layers\)"):
        other.write_beside(str(tmp_path))


# -------------------------------------------------------------------- globs and records

def test_glob_skips_hidden_and_temporary_files(tmp_path):
    good = _records(tmp_path / "train-0.tfrecord")
    _write(tmp_path / ".train-1.tfrecord.tmp-123-abcdef12", b"half written")
    _write(tmp_path / ".hidden", b"x")
    assert file_patterns.expand(str(tmp_path / "*"), "--input_file") == [good]


@pytest.mark.parametrize("pattern, message", [
    ("", r"--input_file is empty"),
    ("{d}/nothing-*.tfrecord", r"pattern .*nothing-\*.tfrecord' matched no file \(hidden"),
    ("{d}/only-temp/*", r"matched no file"),
    ("{d}/missing.tfrecord", r"--input_file: file .*missing.tfrecord does not exist"),
    ("{d}", r"is a directory; give files or a glob"),
])
def test_bad_input_patterns(tmp_path, pattern, message):
    _write(tmp_path / "only-temp" / ".x.tfrecord.tmp-1-2", b"partial")
    with pytest.raises(errors.UserInputError, match=message):
        file_patterns.expand(pattern.format(d=tmp_path), "--input_file")


def test_missing_file_is_also_a_file_not_found_error(tmp_path):
    with pytest.raises(FileNotFoundError):
        file_patterns.expand(str(tmp_path / "gone.tfrecord"), "--input_file")


def _frame_offsets(path):
    offsets, offset, data = [], 0, open(path, "rb").read()
    while offset < len(data):
        offsets.append(offset)
        (length,) = struct.unpack("<Q", data[offset:offset + 8])
        offset += 12 + length + 4
    return offsets


def test_good_records_are_counted(tmp_path):
    path = _records(tmp_path / "ok.tfrecord", count=5)
    assert tfrecord_check.count_records(path) == 5
    assert tfrecord_check.check_files([path], "--input_file") == {path: 5}


def _text_file(tmp_path):
    return _write(tmp_path / "notes.tfrecord", "This is a text file, not records.\n" * 50)


def _empty(tmp_path):
    return _write(tmp_path / "empty.tfrecord", b"")


def _cut_in_record(tmp_path):
    path = _records(tmp_path / "cut.tfrecord")
    data = open(path, "rb").read()
    open(path, "wb").write(data[:-20])
    return path


def _cut_in_header(tmp_path):
    path = _records(tmp_path / "cut-header.tfrecord", count=2)
    second = _frame_offsets(path)[1]
    data = open(path, "rb").read()
    open(path, "wb").write(data[:second + 5])
    return path


def _bad_first_data(tmp_path):
    return _corrupt(_records(tmp_path / "bit-rot.tfrecord"), 20)


def _bad_second_length(tmp_path):
    path = _records(tmp_path / "bad-length.tfrecord")
    return _corrupt(path, _frame_offsets(path)[1] + 1)


@pytest.mark.parametrize("make, message", [
    (_text_file, r"notes.tfrecord: not a TFRecord file: bad length checksum in the record at "
                 r"byte offset 0"),
    (_cut_in_record, r"cut.tfrecord: truncated TFRecord file: the record at byte offset \d+ "
                     r"needs \d+ bytes, the file has \d+"),
    (_cut_in_header, r"cut-header.tfrecord: truncated TFRecord file: a frame header at byte "
                     r"offset \d+ is cut off"),
    (_bad_first_data, r"bit-rot.tfrecord: corrupt TFRecord file: bad data checksum in the "
                      r"record at byte offset 0"),
    (_bad_second_length, r"bad-length.tfrecord: corrupt TFRecord file: bad length checksum in "
                         r"the record at byte offset [1-9]\d*"),
])
def test_broken_tfrecord_files_named_with_offset(tmp_path, make, message):
    with pytest.raises(errors.UserInputError, match=message):
        tfrecord_check.count_records(make(tmp_path))


def test_all_empty_record_files_refused(tmp_path):
    paths = [_empty(tmp_path), _write(tmp_path / "also-empty.tfrecord", b"")]
    with pytest.raises(errors.UserInputError, match=r"--input_file: no record in .*empty.tfrecord, "
                                                 r".*also-empty.tfrecord"):
        tfrecord_check.check_files(paths, "--input_file")


def _dataset(patterns, max_seq_length=32):
    return input_pipeline.pretraining_dataset(
        patterns, batch_size=2, max_seq_length=max_seq_length, max_predictions_per_seq=4,
        is_training=True)


def test_pretraining_input_mixing_two_lengths_named(tmp_path):
    _records(tmp_path / "a-0.tfrecord", length=32)
    _records(tmp_path / "a-1.tfrecord", length=64)
    with pytest.raises(errors.UserInputError, match=r"a-1.tfrecord: input_ids has length 64 but "
                                                 r"--max_seq_length=32"):
        _dataset(str(tmp_path / "a-*.tfrecord"))


def test_pretraining_input_that_is_not_pretraining_data(tmp_path):
    path = tmp_path / "glue.tfrecord"
    with tf.io.TFRecordWriter(str(path)) as writer:
        writer.write(tf.train.Example().SerializeToString())
    with pytest.raises(errors.UserInputError, match=r"glue.tfrecord: not pretraining data"):
        _dataset(str(path))


def test_pretraining_input_that_is_empty_stops_at_once(tmp_path):
    with pytest.raises(errors.UserInputError, match=r"no record in"):
        _dataset(_empty(tmp_path))


def test_pretraining_input_that_is_text_never_crashes(tmp_path):
    with pytest.raises(errors.UserInputError, match=r"not a TFRecord file"):
        _dataset(_text_file(tmp_path))


# ------------------------------------------------------------ corpora and vocabularies

def _options(model_file, **changes):
    values = dict(spm_model_file=model_file, max_seq_length=64, max_predictions_per_seq=10,
                  dupe_factor=1, random_seed=7)
    values.update(changes)
    return options_lib.DataOptions(**values)


ELF = b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 8
UTF16 = "A line of text in UTF-16.\nAnother one.\n".encode("utf-16")
LATIN1 = ("Caf\xe9 cr\xe8me br\xfbl\xe9e \xe0 la fran\xe7aise. " * 40).encode("latin-1")


@pytest.mark.parametrize("name, data, message", [
    ("libfoo.so", ELF, r"libfoo.so: not UTF-8 text \(\d+ NUL bytes"),
    ("utf16.txt", UTF16, r"utf16.txt: not UTF-8 text \(\d+ NUL bytes .*UTF-16"),
    ("latin1.txt", LATIN1, r"latin1.txt: not UTF-8 text \(\d+\.\d% of bytes not UTF-8"),
    ("empty.txt", b"", r"empty.txt: input file is empty"),
    ("blank.txt", b"\n \n\n", r"blank.txt: input file contains no text"),
])
def test_corpus_that_is_not_text(spm_model_file, tmp_path, name, data, message):
    path = _write(tmp_path / "in" / name, data)
    with pytest.raises(errors.UserInputError, match=message):
        create_data.create_pretraining_data(path, str(tmp_path / "out" / "x"),
                                            _options(spm_model_file), num_workers=1)
    assert _left_behind(tmp_path / "out") == []


@pytest.mark.parametrize("output, message", [
    ("", r"--output_file is empty"),
    ("{d}/o.tfrecord,{d}/o.tfrecord", r"--output_file lists a file twice"),
    ("{d}/in/corpus.txt", r"--output_file would overwrite input file"),
])
def test_bad_output_file_flag(spm_model_file, tmp_path, output, message):
    corpus = _write(tmp_path / "in" / "corpus.txt", "One sentence here.\nAnother one.\n")
    with pytest.raises(errors.UserInputError, match=message):
        create_data.create_pretraining_data(corpus, output.format(d=tmp_path),
                                            _options(spm_model_file), num_workers=1)


@pytest.mark.parametrize("changes, message", [
    ({"max_seq_length": 4}, r"--max_seq_length=4 is too small"),
    ({"masked_lm_prob": 2.0}, r"--masked_lm_prob=2.0: expected a probability in \[0, 1\]"),
    ({"dupe_factor": 0}, r"--dupe_factor=0: expected at least 1"),
    ({"spm_model_file": None}, r"--vocab_file is required when --spm_model_file is not given"),
])
def test_bad_data_options(spm_model_file, tmp_path, changes, message):
    corpus = _write(tmp_path / "corpus.txt", "One sentence here.\n")
    with pytest.raises(errors.UserInputError, match=message):
        create_data.create_pretraining_data(corpus, str(tmp_path / "o"),
                                            _options(spm_model_file, **changes), num_workers=1)


def _brown_lines(real_data, count):
    with open(real_data["brown"][0], encoding="utf-8") as reader:
        return [next(reader) for _ in range(count)]


@pytest.mark.slow
def test_shard_sets_never_mix_and_stale_temporaries_go(real_data, spm_model_file, tmp_path):
    inputs = [_write(tmp_path / "in" / f"part-{i}.txt", "".join(_brown_lines(real_data, 60)))
              for i in range(2)]
    out = tmp_path / "out"
    stale = _write(out / ".train-00000-of-00002.tmp-99999-deadbeef", b"half")
    create_data.create_pretraining_data(",".join(inputs), str(out / "train"),
                                        _options(spm_model_file), num_workers=1)
    assert not os.path.exists(stale)  # the killed run's temporary was removed
    assert sorted(os.listdir(out)) == ["train-00000-of-00002", "train-00001-of-00002",
                                       "train.summary.json"]
    third = _write(tmp_path / "in" / "part-2.txt", "".join(_brown_lines(real_data, 60)))
    with pytest.raises(errors.UserInputError, match=r"already holds another shard set of train "
                                                 r"\(train-00000-of-00002"):
        create_data.create_pretraining_data(f"{','.join(inputs)},{third}", str(out / "train"),
                                            _options(spm_model_file), num_workers=1)
    assert len(os.listdir(out)) == 3  # nothing new, nothing removed


@pytest.mark.slow
def test_more_round_robin_outputs_than_instances(real_data, spm_model_file, tmp_path):
    corpus = _write(tmp_path / "in.txt", "".join(_brown_lines(real_data, 12)))
    outputs = ",".join(str(tmp_path / "out" / f"o{i}.tfrecord") for i in range(60))
    with pytest.raises(errors.UserInputError, match=r"--output_file lists 60 files but the input "
                                                 r"made only \d+ instances"):
        create_data.create_pretraining_data(corpus, outputs, _options(spm_model_file),
                                            num_workers=1)
    assert _left_behind(tmp_path / "out") == []


@pytest.mark.slow
def test_truncation_of_a_huge_line_is_reported(spm_model_file, tmp_path, caplog):
    words = " ".join(f"word{i % 50}" for i in range(20000))
    corpus = _write(tmp_path / "one-line.txt", f"{words}\nA short sentence.\n")
    summary = create_data.create_pretraining_data(corpus, str(tmp_path / "o"),
                                                  _options(spm_model_file), num_workers=1)
    assert summary["input"]["kept_token_fraction"] < 0.05
    assert summary["input_files"][0]["kept_token_fraction"] < 0.05
    assert "one-line.txt: only" in caplog.text and "truncation" in caplog.text


@pytest.mark.parametrize("name, data, message", [
    ("lib.so", ELF, r"lib.so: not UTF-8 text"),
    ("utf16.txt", UTF16, r"utf16.txt: not UTF-8 text"),
    ("blank.txt", b"\n\n", r"--input: .*blank.txt: no text in the input"),
])
def test_vocabulary_input_that_is_not_text(tmp_path, name, data, message):
    path = _write(tmp_path / name, data)
    with pytest.raises(errors.UserInputError, match=message):
        vocab.train_albert_spm([path], str(tmp_path / "spm"), vocab_size=100)
    assert not os.path.exists(tmp_path / "spm.model")


def test_vocabulary_input_patterns(tmp_path):
    with pytest.raises(errors.MissingFileError, match=r"--input: no file matches '.*none\*'"):
        vocab.expand_input_patterns(str(tmp_path / "none*"))
    with pytest.raises(errors.UserInputError, match=r"unknown SentencePiece trainer option"):
        vocab.train_albert_spm([_write(tmp_path / "t.txt", "text\n")], str(tmp_path / "s"),
                               no_such_option=1)


# ---------------------------------------------------------------------------- flags

def _training_flags(*args):
    flag_values = flags.FlagValues()
    training_flags.define_training_flags(train_batch_size=32, learning_rate=5e-5,
                                         optimizer="adamw", save_checkpoints_steps=100,
                                         eval_batch_size=8, flag_values=flag_values)
    training_flags.define_evaluation_flags(flag_values=flag_values)
    flag_values(["prog", "--output_dir=out", *args])
    return flag_values


@pytest.mark.parametrize("flag", [
    "--learning_rate=0", "--learning_rate=-1", "--train_batch_size=0", "--eval_batch_size=0",
    "--save_checkpoints_steps=0", "--keep_checkpoint_max=0", "--gradient_accumulation_steps=0",
    "--iterations_per_loop=0", "--poly_power=0", "--eval_timeout_secs=-1",
    "--start_warmup_step=-1", "--num_tpu_cores=0",
])
def test_training_flag_out_of_range(flag):
    with pytest.raises(flags.IllegalFlagValueError, match=flag.split("=")[0].lstrip("-")):
        _training_flags(flag)


@pytest.mark.parametrize("flag", ["--doc_stride=0", "--warmup_proportion=1.5",
                                  "--dropout_prob=1.0", "--n_best_size=0",
                                  "--num_train_epochs=-1", "--max_query_length=0"])
def test_squad_flag_out_of_range(flag):
    flag_values = flags.FlagValues()
    run_squad.define_flags(flag_values)
    with pytest.raises(flags.IllegalFlagValueError, match=flag.split("=")[0].lstrip("-")):
        flag_values(["run_squad.py", "--albert_config_file=c", "--spm_model_file=s",
                     "--output_dir=o", flag])


# ------------------------------------------------------------------- GLUE, SQuAD, RACE

def _glue_job(tmp_path, spm_model_file, **config_changes):
    config = config_lib.AlbertConfig(**dict(SIZES, **config_changes))
    return glue_run.ClassifierJob("sst-2", str(tmp_path / "glue"), str(tmp_path / "out"), config,
                                  32, spm_model_file=spm_model_file)


@pytest.mark.parametrize("text, message", [
    ("sentence\tlabel\n", r"SST-2/train.tsv: no examples in the train file"),
    ("sentence\tlabel\na film\tmaybe\n", r"SST-2/train.tsv, line 2, column 2: unknown label 'maybe'"),
], ids=["empty", "bad_label"])
def test_glue_bad_train_file(tmp_path, spm_model_file, text, message):
    _write(tmp_path / "glue" / "SST-2" / "train.tsv", text)
    job = _glue_job(tmp_path, spm_model_file)
    with pytest.raises(errors.UserInputError, match=message):
        job.records("train")
    assert _left_behind(tmp_path / "out") == []


@pytest.mark.parametrize("existing", [False, True])
def test_fine_tuning_refused_for_missing_data_writes_no_output_folder(tmp_path, spm_model_file,
                                                                      existing):
    """--do_train --do_eval with the dev file missing: refused, naming it, after the train
    records were cached. A new --output_dir is gone again; an existing one keeps what it held
    and gets no albert_config.json."""
    from albert_tf.training import fine_tuning, loop
    _write(tmp_path / "glue" / "SST-2" / "train.tsv", "sentence\tlabel\na fine film\t1\n")
    if existing:
        _write(tmp_path / "out" / "notes.txt", "mine")
    job = _glue_job(tmp_path, spm_model_file)
    options = fine_tuning.FlowOptions(str(tmp_path / "out"), do_train=True, do_eval=True,
                                      allow_random_init=True)
    training_config = loop.TrainingConfig(str(tmp_path / "out"), train_batch_size=2,
                                          num_train_steps=1)
    with pytest.raises(errors.UserInputError, match=r"SST-2/dev.tsv"):
        fine_tuning.train_evaluate_predict(job, options, training_config,
                                           tf.distribute.get_strategy())
    if existing:
        assert (tmp_path / "out" / "notes.txt").read_text() == "mine"
        assert not (tmp_path / "out" / "albert_config.json").exists()
    else:
        assert not (tmp_path / "out").exists()


def test_glue_vocabulary_larger_than_config(tmp_path, spm_model_file):
    with pytest.raises(errors.UserInputError, match=r"vocab_size 99 is smaller than the 4000 ids "
                                                 r"of .*brown-4k.model"):
        _glue_job(tmp_path, spm_model_file, vocab_size=99)


def _squad(files, tmp_path, *extra):
    flag_values = flags.FlagValues()
    run_squad.define_flags(flag_values)
    flag_values(["run_squad.py", f"--albert_config_file={files['config']}",
                 f"--spm_model_file={files['spm']}", f"--output_dir={tmp_path / 'out'}",
                 "--max_seq_length=64", "--max_query_length=16", "--doc_stride=32", *extra])
    return run_squad.run(flag_values)


@pytest.fixture
def squad_files(tmp_path, spm_model_file):
    return {"config": _config_file(tmp_path), "spm": spm_model_file,
            "empty": _write(tmp_path / "empty.json", json.dumps({"data": []})),
            "broken": _write(tmp_path / "broken.json", "{\"data\": [")}


@pytest.mark.parametrize("extra, message", [
    (("--do_predict", "--predict_file={empty}"), r"--predict_file=.*empty.json: no question"),
    (("--do_train", "--train_file={empty}", "--allow_random_init"),
     r"--train_file=.*empty.json: no question"),
    (("--do_train", "--train_file={empty}"), r"--do_train without --init_checkpoint would "
                                             r"fine-tune a randomly initialised model"),
    (("--do_predict", "--predict_file={broken}"), r"broken.json"),
    (("--do_predict", "--predict_file={missing}"), r"missing.json: SQuAD file not found"),
])
def test_squad_bad_input(squad_files, tmp_path, extra, message):
    names = dict(squad_files, missing=str(tmp_path / "missing.json"))
    with pytest.raises(errors.UserInputError, match=message):
        _squad(squad_files, tmp_path, *[item.format(**names) for item in extra])


def test_squad_vocabulary_larger_than_config(squad_files, tmp_path):
    squad_files["config"] = _config_file(tmp_path, "small.json", vocab_size=100)
    with pytest.raises(errors.UserInputError, match=r"small.json: vocab_size 100 is smaller"):
        _squad(squad_files, tmp_path, "--do_predict", f"--predict_file={squad_files['empty']}")


def _race_job(tmp_path, spm_model_file, **changes):
    config = config_lib.AlbertConfig(**SIZES)
    settings = dict(max_seq_length=64, max_qa_length=16, spm_model_file=spm_model_file)
    settings.update(changes)
    return race_run.RaceJob(str(tmp_path / "race"), str(tmp_path / "out"), config, **settings)


def test_race_split_without_questions(tmp_path, spm_model_file):
    for level in ("middle", "high"):
        _write(tmp_path / "race" / "RACE" / "train" / level / "all.txt", "\n")
    with pytest.raises(errors.UserInputError, match=r"RACE/train: no questions found"):
        _race_job(tmp_path, spm_model_file).cache("train")


def test_race_dropout_out_of_range(tmp_path, spm_model_file):
    with pytest.raises(errors.UserInputError, match=r"--dropout_prob=1.0: must be in \[0, 1\)"):
        _race_job(tmp_path, spm_model_file, dropout_prob=1.0)


# ------------------------------------------------------------------------ output dirs

def test_output_dir_that_cannot_be_created(tmp_path):
    blocker = _write(tmp_path / "a-file", "x")
    with pytest.raises(errors.UserInputError, match=r"--output_dir=.*a-file/out: cannot write"):
        output_lock.check_writable(os.path.join(blocker, "out"), "--output_dir")


# ------------------------------------------------------------- the scripts themselves

def _spawn(script, *args):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    return subprocess.Popen([sys.executable, os.path.join(REPO_ROOT, script), *args],
                            cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


@pytest.mark.slow
def test_scripts_refuse_bad_input_with_one_line(tmp_path, spm_model_file):
    """Exit status 2 (absl's 1 for a flag range), no signal, bounded time, the culprit named."""
    config = _config_file(tmp_path)
    typo = _config_file(tmp_path, "typo.json", hiden_size=32)
    empty = _empty(tmp_path)
    text = _text_file(tmp_path)
    utf16 = _write(tmp_path / "utf16.txt", UTF16)
    locked = tmp_path / "locked"
    pretraining = ["--albert_config_file=" + config, "--max_seq_length=32",
                   "--max_predictions_per_seq=4", "--num_train_steps=2", "--train_batch_size=2"]
    cases = [
        (("run_pretraining.py", *pretraining, f"--input_file={empty}",
          f"--output_dir={tmp_path / 'p1'}"), 2, r"--input_file: no record in .*empty.tfrecord"),
        (("run_pretraining.py", *pretraining, f"--input_file={text}",
          f"--output_dir={tmp_path / 'p2'}"), 2, r"notes.tfrecord: not a TFRecord file"),
        (("run_pretraining.py", *pretraining, f"--input_file={text}", "--learning_rate=-1",
          f"--output_dir={tmp_path / 'p3'}"), 1, r"--learning_rate must be > 0"),
        (("build_vocab.py", f"--input={utf16}", f"--model_prefix={tmp_path / 'v' / 'spm'}"), 2,
         r"utf16.txt: not UTF-8 text"),
        (("create_pretraining_data.py", f"--input_file={utf16}",
          f"--output_file={tmp_path / 'd' / 'x'}", f"--spm_model_file={spm_model_file}"), 2,
         r"utf16.txt: not UTF-8 text"),
        (("run_classifier.py", "--task_name=sst-2", f"--data_dir={tmp_path}",
          f"--albert_config_file={typo}", f"--spm_model_file={spm_model_file}",
          f"--output_dir={tmp_path / 'c'}", "--do_train", "--allow_random_init"), 2,
         r"typo.json: unknown field 'hiden_size'; did you mean 'hidden_size'"),
    ]
    for name in ("other-c", "other-r", "other-s"):  # each holds a run of a wider model
        _config_file(tmp_path / name, hidden_size=64)
    fine_tuning = [f"--albert_config_file={config}", f"--spm_model_file={spm_model_file}",
                   "--do_train", "--allow_random_init", "--max_seq_length=32"]
    squad_train = _write(tmp_path / "squad.json", json.dumps({"data": []}))
    cases += [
        (("run_classifier.py", "--task_name=sst-2", f"--data_dir={tmp_path}", *fine_tuning,
          f"--output_dir={tmp_path / 'other-c'}"), 2,
         r"other-c/albert_config.json: the output directory holds a run of another model "
         r"config \(differs in hidden_size\)"),
        (("run_race.py", f"--data_dir={tmp_path}", *fine_tuning, "--max_qa_length=16",
          f"--output_dir={tmp_path / 'other-r'}"), 2,
         r"other-r/albert_config.json: the output directory holds a run of another model"),
        (("run_squad.py", f"--train_file={squad_train}", *fine_tuning, "--max_query_length=16",
          "--doc_stride=16",
          f"--output_dir={tmp_path / 'other-s'}"), 2,
         r"other-s/albert_config.json: the output directory holds a run of another model"),
    ]
    with output_lock.hold(str(locked), "train"):
        good_records = _records(tmp_path / "good.tfrecord", count=8)
        cases.append((("run_pretraining.py", *pretraining, f"--input_file={good_records}",
                       f"--output_dir={locked}"), 2, r"another train run is using this output "
                                                     r"directory \(pid \d+"))
        _write(tmp_path / "glue" / "SST-2" / "train.tsv",
               "sentence\tlabel\na fine film\t1\na dull film\t0\n")
        cases.append((("run_classifier.py", "--task_name=sst-2", f"--data_dir={tmp_path / 'glue'}",
                       f"--albert_config_file={config}", f"--spm_model_file={spm_model_file}",
                       f"--output_dir={locked}", "--do_train", "--allow_random_init",
                       "--max_seq_length=32", "--train_step=1", "--train_batch_size=2"), 2,
                      r"another train run is using this output directory"))
        processes = [(_spawn(*args), status, message, args) for args, status, message in cases]
        for process, status, message, args in processes:
            _, stderr = process.communicate(timeout=300)
            assert 0 <= process.returncode < 128, (args, process.returncode)
            assert process.returncode == status, (args, stderr[-2000:])
            last = [line for line in stderr.splitlines() if line.strip()][-2:]
            assert any(re.search(message, line) for line in last), (args, last)
            if status == 2:
                assert "Traceback" not in stderr
                assert last[-1].startswith(f"{args[0]}: error: "), last
    for name in ("other-c", "other-r", "other-s"):
        assert json.loads((tmp_path / name / "albert_config.json").read_text())["hidden_size"] == 64
    for directory in ("p1", "p2", "p3", "v", "d", "c"):
        leftovers = [p for p in _left_behind(tmp_path / directory)
                     if not os.path.basename(p).startswith(("albert_config", "cached_"))]
        assert leftovers == [], leftovers
    assert not os.path.exists(locked / "model.ckpt-2.index")


def test_crc32c_known_values():
    """CRC-32C's published check values (RFC 3720), and TFRecord's masking of the empty one."""
    from albert_tf.files.crc32c import crc32c
    assert crc32c(b"123456789") == 0xE3069283
    assert crc32c(b"\x00" * 32) == 0x8A9136AA
    assert tfrecord_check.masked_crc32c(b"") == 0xA282EAD8


@pytest.mark.slow
def test_killed_data_run_never_reaches_training(real_data, spm_model_file, tmp_path):
    """SIGKILL in the middle of create_pretraining_data.py: a training glob over the folder
    takes no temporary file, and the rerun removes them and completes."""
    out = tmp_path / "records"
    command = ["create_pretraining_data.py", f"--input_file={','.join(real_data['brown'][:3])}",
               f"--output_file={out / 'train'}", f"--spm_model_file={spm_model_file}",
               "--max_seq_length=64", "--max_predictions_per_seq=10", "--dupe_factor=2",
               "--num_workers=1"]
    process = _spawn(*command)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not any(
                ".tmp-" in name for name in (os.listdir(out) if out.exists() else [])):
            time.sleep(0.05)
        assert any(".tmp-" in name for name in os.listdir(out)), "no temporary file appeared"
    finally:
        process.kill()
        process.communicate(timeout=60)
    assert process.returncode == -9
    if any(not name.startswith(".") for name in os.listdir(out)):
        for path in file_patterns.expand(str(out / "*"), "--input_file",
                                         exclude_suffixes=(".summary.json",)):
            assert ".tmp-" not in path
            tfrecord_check.count_records(path)  # complete files only
    else:
        with pytest.raises(errors.UserInputError, match="matched no file"):
            file_patterns.expand(str(out / "*"), "--input_file")
    rerun = _spawn(*command)
    _, stderr = rerun.communicate(timeout=300)
    assert rerun.returncode == 0, stderr[-2000:]
    assert not [name for name in os.listdir(out) if name.startswith(".")]
    files = file_patterns.expand(str(out / "*"), "--input_file",
                                 exclude_suffixes=(".summary.json",))
    assert len(files) == 3 and sum(tfrecord_check.check_files(files, "--input_file").values())


# ------------------------------------------- checkpoints whose variables have other shapes

def _classifier_checkpoint(path, num_labels):
    from albert_tf import checkpoints
    from albert_tf.modeling import classifier, encoder
    model = classifier.AlbertClassifier(encoder.AlbertEncoder(config_lib.AlbertConfig(**SIZES)), num_labels=num_labels)
    return checkpoints.write_checkpoint(str(path), dict(model.checkpoint_variables(),
                                                        global_step=7))


def _classifier_variables(num_labels):
    from albert_tf.modeling import classifier, encoder
    model = classifier.AlbertClassifier(encoder.AlbertEncoder(config_lib.AlbertConfig(**SIZES)), num_labels=num_labels)
    return model.checkpoint_variables()


HEAD_MISMATCH = (r"model.ckpt-7: shape mismatch for head variable output_weights: the model has "
                 r"\[3, 32\], the checkpoint \[2, 32\]")


def test_two_label_head_refused_for_three_labels_everywhere(tmp_path):
    """Evaluation, prediction (restore_model) and warm-starting (--init_checkpoint) refuse a
    head of another shape instead of restoring a random one; an export already did."""
    from albert_tf import checkpoints
    from albert_tf.training import checkpointing
    prefix = _classifier_checkpoint(tmp_path / "model.ckpt-7", num_labels=2)
    variables = _classifier_variables(3)
    before = variables["bert/embeddings/word_embeddings"].numpy()
    with pytest.raises(checkpoints.CheckpointError, match=HEAD_MISMATCH):
        checkpoints.load_into(variables, prefix)
    with pytest.raises(errors.UserInputError, match=HEAD_MISMATCH):
        checkpointing.warm_start(variables, prefix)
    manager = checkpointing.CheckpointManager(str(tmp_path), variables, optimizer=None)
    with pytest.raises(errors.UserInputError, match=HEAD_MISMATCH):
        manager.restore_model(prefix)
    assert (variables["bert/embeddings/word_embeddings"].numpy() == before).all()  # untouched
    report = checkpoints.load_into(variables, prefix, new_heads=True)  # said to be new
    assert [entry[0] for entry in report.mismatched] == ["output_weights", "output_bias"]
    # The way the message gives to fine-tune a new head on that encoder:
    from albert_tf.export import pretrained
    config_lib.AlbertConfig(**SIZES).write_beside(str(tmp_path))
    encoder_only = pretrained.export_checkpoint(str(tmp_path), "model.ckpt-7",
                                                str(tmp_path / "encoder" / "model.ckpt-7"))
    report = checkpointing.warm_start(variables, encoder_only)
    assert report.missing == ["output_weights", "output_bias"] and not report.mismatched
    assert (variables["bert/embeddings/word_embeddings"].numpy() != before).any()


def test_tagging_label_list_that_grew_is_refused(tmp_path):
    from albert_tf import checkpoints
    from albert_tf.modeling import encoder, token_classifier
    config = config_lib.AlbertConfig(**SIZES)
    old = token_classifier.AlbertTokenClassifier(encoder.AlbertEncoder(config), 3)
    prefix = checkpoints.write_checkpoint(str(tmp_path / "model.ckpt-7"),
                                          old.checkpoint_variables())
    grown = token_classifier.AlbertTokenClassifier(encoder.AlbertEncoder(config), 5)
    with pytest.raises(checkpoints.CheckpointError,
                       match=r"head variable \S+: the model has \[5, 32\], the checkpoint "
                             r"\[3, 32\]"):
        checkpoints.load_into(grown.checkpoint_variables(), prefix)


# ------------------------------------------------------- damaged checkpoints, full disks

def _truncated(tmp_path, suffix):
    from albert_tf import checkpoints
    prefix = _classifier_checkpoint(tmp_path / "model.ckpt-7", num_labels=2)
    path = prefix + suffix
    data = open(path, "rb").read()
    open(path, "wb").write(data[:len(data) // 2])
    return checkpoints, prefix, len(data) // 2


def test_truncated_checkpoint_data_named_with_its_size(tmp_path):
    from albert_tf.training import checkpointing
    checkpoints, prefix, size = _truncated(tmp_path, ".data-00000-of-00001")
    message = (rf"model.ckpt-7.data-00000-of-00001: truncated or corrupt checkpoint data: tensor "
               rf"\S+ cannot be read \(Read less bytes than requested; the file ends at byte "
               rf"offset {size}\)")
    variables = _classifier_variables(2)
    with pytest.raises(checkpoints.CheckpointError, match=message):
        checkpoints.load_into(variables, prefix)
    with pytest.raises(checkpoints.CheckpointError, match=message):
        checkpoints.read_tensors(prefix)
    manager = checkpointing.CheckpointManager(str(tmp_path), variables, optimizer=None)
    with pytest.raises(errors.UserInputError, match=message):
        manager.restore_model(prefix)


def test_truncated_checkpoint_index_named(tmp_path):
    from albert_tf.training import checkpointing
    checkpoints, prefix, _ = _truncated(tmp_path, ".index")
    message = r"model.ckpt-7.index: damaged checkpoint index \("
    for call in (lambda: checkpoints.list_variables(prefix),
                 lambda: checkpoints.load_into(_classifier_variables(2), prefix),
                 lambda: checkpointing.CheckpointManager(
                     str(tmp_path), _classifier_variables(2), None).restore_model(prefix)):
        with pytest.raises(checkpoints.CheckpointError, match=message):
            call()


# The message TensorFlow 2.21 gives when SaveV2 meets a full disk (seen on a 64 KiB tmpfs).
def _disk_full(*args, **kwargs):
    raise tf.errors.ResourceExhaustedError(
        None, None, "{{function_node __wrapped__SaveV2}} /x/.model.ckpt-3.tmp.data-00000-of-00001"
                    ".tempstate1; No space left on device [Op:SaveV2]")


def test_full_disk_while_saving_a_checkpoint(tmp_path, monkeypatch):
    from albert_tf import checkpoints
    monkeypatch.setattr(tf.raw_ops, "SaveV2", _disk_full)
    with pytest.raises(errors.UserInputError,
                       match=r"model.ckpt-3.data-00000-of-00001: no space left on device while "
                             r"writing it"):
        checkpoints.write_checkpoint(str(tmp_path / "model.ckpt-3"), {"a": [1.0]})
    assert _left_behind(tmp_path) == []


def test_full_disk_while_writing_any_file(tmp_path):
    import errno
    from albert_tf.files import io_utils
    with pytest.raises(errors.UserInputError, match=r"records.tfrecord: no space left on device"):
        with io_utils.atomic_path(str(tmp_path / "records.tfrecord")) as temp:
            open(temp, "wb").write(b"half")
            raise OSError(errno.ENOSPC, "No space left on device")
    assert _left_behind(tmp_path) == []
    with pytest.raises(OSError, match="Permission denied"):  # other errors stay as they are
        with io_utils.atomic_path(str(tmp_path / "other.txt")):
            raise OSError(errno.EACCES, "Permission denied")


# --------------------------------------------------------------- unusable named files

@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity"])
@pytest.mark.parametrize("field", ["initializer_range", "hidden_dropout_prob"])
def test_non_finite_config_value(tmp_path, field, value):
    text = json.dumps(SIZES)[:-1] + f', "{field}": {value}}}'
    path = _write(tmp_path / "albert_config.json", text)
    with pytest.raises(errors.UserInputError, match=rf"albert_config.json: field '{field}' must "
                                                 rf"be a finite non-negative number"):
        config_lib.AlbertConfig.from_json_file(path)


def test_directories_given_as_files(tmp_path):
    from albert_tf.text import tokenization
    from albert_tf.squad import reader as squad_reader
    from albert_tf.tagging import reader as tagging_reader
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "train.txt").mkdir()
    for call, what in [
            (lambda: config_lib.AlbertConfig.from_json_file(str(folder)), "config file"),
            (lambda: tokenization.load_sp_model(str(folder)), "SentencePiece model"),
            (lambda: tokenization.load_vocab(str(folder)), "vocabulary"),
            (lambda: squad_reader.read_squad_examples(str(folder), False), "SQuAD file"),
            (lambda: tagging_reader.read_sentences(str(folder / "train.txt")), "tagging file"),
            (lambda: tfrecord_check.count_records(str(folder)), "TFRecord file")]:
        with pytest.raises(errors.UserInputError, match=rf"folder\S*: {what}.* is a directory; "
                                                     rf"expected a file"):
            call()


def test_unreadable_files(tmp_path, monkeypatch):
    from albert_tf.text import tokenization
    config = _config_file(tmp_path)
    vocab_file = _write(tmp_path / "vocab.txt", "[PAD]\n[UNK]\n")
    for path in (config, vocab_file):
        os.chmod(path, 0)
    if os.geteuid() == 0:  # root reads without read permission: answer as the kernel would a user
        unreadable = {str(config), str(vocab_file)}
        real_access = os.access
        monkeypatch.setattr(os, "access", lambda path, mode, **kw: (
            False if os.fspath(path) in unreadable and mode & os.R_OK else real_access(path, mode, **kw)))
    with pytest.raises(errors.UserInputError, match=r"albert_config.json: config file cannot be "
                                                 r"read \(permission denied\)"):
        config_lib.AlbertConfig.from_json_file(config)
    with pytest.raises(errors.UserInputError, match=r"vocab.txt: vocabulary .*cannot be read"):
        tokenization.load_vocab(vocab_file)


def test_non_utf8_task_files_named_with_line_and_byte_offset(tmp_path, spm_model_file):
    from albert_tf.squad import reader as squad_reader
    from albert_tf.tagging import reader as tagging_reader
    tsv = "sentence\tlabel\na fine film\t1\n".encode() + b"caf\xe9 cr\xe8me\t0\n"
    _write(tmp_path / "glue" / "SST-2" / "train.tsv", tsv)
    with pytest.raises(errors.UserInputError, match=r"SST-2/train.tsv, line 3: not UTF-8 "
                                                 r"\(byte 0xe9 at byte offset 32\)"):
        _glue_job(tmp_path, spm_model_file).records("train")
    squad = json.dumps({"data": []}).encode()[:-1] + b' , "x": "\xff"}'
    with pytest.raises(errors.UserInputError, match=r"squad.json, line 1: not UTF-8 \(byte 0xff "
                                                 r"at byte offset 20\)"):
        squad_reader.read_squad_examples(_write(tmp_path / "squad.json", squad), True)
    tagging = _write(tmp_path / "tags.txt", b"EU B-ORG\n\nrejects O\nGerm\xe4n B-MISC\n")
    with pytest.raises(errors.UserInputError, match=r"tags.txt, line 4: not UTF-8 \(byte 0xe4 at "
                                                 r"byte offset 24\)"):
        tagging_reader.read_sentences(tagging)
    _write(tmp_path / "race" / "RACE" / "dev" / "middle" / "1.txt", b'{"article": "\x80"}')
    _write(tmp_path / "race" / "RACE" / "dev" / "high" / "1.txt", b"{}")
    with pytest.raises(errors.UserInputError, match=r"middle/1.txt, line 1: not UTF-8 \(byte 0x80 "
                                                 r"at byte offset 13\)"):
        _race_job(tmp_path, spm_model_file).cache("dev")


# ------------------------------------------------------- task files that are wrong but parse

def _squad_json(*ids):
    qas = [{"id": qas_id, "question": "Who?", "answers": [{"text": "Ann", "answer_start": 0}]}
           for qas_id in ids]
    return json.dumps({"data": [{"paragraphs": [{"context": "Ann came.", "qas": qas}]}]})


def test_squad_questions_sharing_an_id(tmp_path):
    from albert_tf.squad import reader as squad_reader
    path = _write(tmp_path / "dev.json", _squad_json("q1", "q2", "q1"))
    for is_training in (True, False):
        with pytest.raises(errors.UserInputError, match=r"dev.json: data\[0\].paragraphs\[0\]"
                                                     r".qas\[2\]: question id 'q1' is used again "
                                                     r"\(first at data\[0\].paragraphs\[0\]"
                                                     r".qas\[0\]\)"):
            squad_reader.read_squad_examples(path, is_training)
    examples, _ = squad_reader.read_squad_examples(
        _write(tmp_path / "ok.json", _squad_json("q1", "q2")), False)
    assert [example.qas_id for example in examples] == ["q1", "q2"]


@pytest.mark.parametrize("text, message", [
    ("The cat sat on the mat .\nA dog barked loudly .\n",
     r"one-a-line.txt, line 2: 5 columns, but line 1 has 7; expected one 'token tag' per line"),
    ("EU B-ORG\nrejects O\nGerman B-MISC extra\n",
     r"one-a-line.txt, line 3: 3 columns, but line 1 has 2"),
])
def test_tagging_file_in_another_layout(tmp_path, text, message):
    from albert_tf.tagging import reader as tagging_reader
    with pytest.raises(errors.UserInputError, match=message):
        tagging_reader.read_sentences(_write(tmp_path / "one-a-line.txt", text))
    conll = _write(tmp_path / "conll.txt", "EU NNP B-NP B-ORG\nrejects VBZ B-VP O\n\n"
                                           "German JJ B-NP B-MISC\n")
    assert [s.tags for s in tagging_reader.read_sentences(conll)] == [("B-ORG", "O"), ("B-MISC",)]


@pytest.mark.parametrize("score", ["nan", "NaN", "inf", "-Infinity"])
def test_stsb_non_finite_score(tmp_path, score):
    from albert_tf.glue import processors
    header = "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2\tscore"
    row = f"0\tmain\tf\t2012\t1\ts\ts\tA plane takes off.\tAn air plane is taking off.\t{score}"
    _write(tmp_path / "STS-B" / "train.tsv", f"{header}\n{row}\n")
    with pytest.raises(errors.UserInputError, match=rf"STS-B/train.tsv, line 2, column 10: score "
                                                 rf"'{score}' is not finite"):
        processors.StsbProcessor().get_train_examples(str(tmp_path))


def test_best_checkpoint_never_chosen_on_a_nan_metric(tmp_path):
    from albert_tf.training import evaluation
    _classifier_checkpoint(tmp_path / "model.ckpt-7", num_labels=2)
    values = iter([float("nan"), 0.25])
    evaluator = evaluation.CheckpointEvaluator(str(tmp_path), lambda _: {"acc": next(values)},
                                               "acc")
    evaluator.evaluate_checkpoint(7, str(tmp_path / "model.ckpt-7"))
    assert (evaluator.best_step, evaluator.best_value) == (-1, None)
    assert not os.path.exists(tmp_path / "model.ckpt-best.index")
    evaluator.evaluate_checkpoint(8, str(tmp_path / "model.ckpt-7"))
    assert (evaluator.best_step, evaluator.best_value) == (8, 0.25)
    assert os.path.exists(tmp_path / "model.ckpt-best.index")


# ------------------------------------------------------------------- degenerate data

@pytest.mark.parametrize("length", [5, 8, 15])
def test_sequence_too_short_for_sentence_order_refused(spm_model_file, tmp_path, length):
    corpus = _write(tmp_path / "corpus.txt", "One sentence here.\nAnother one.\n")
    with pytest.raises(errors.UserInputError, match=rf"--max_seq_length={length} is too small: "
                                                 rf".*one class; use --max_seq_length=16 or more"):
        create_data.create_pretraining_data(corpus, str(tmp_path / "o"),
                                            _options(spm_model_file, max_seq_length=length),
                                            num_workers=1)
    assert _left_behind(tmp_path / "o") == []


# ------------------------------------------------------------------------ exports

def test_reexport_removes_a_killed_exports_temporary_folder(tmp_path):
    from albert_tf.export import versioned
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    host = versioned._HOST
    killed = tmp_path / f".tmp-{host}-{dead.pid}-0123abcd"
    live = tmp_path / f".tmp-{host}-{os.getpid()}-89abcdef"
    elsewhere = tmp_path / f".tmp-otherhost-{dead.pid}-0123abcd"
    for folder in (killed, live, elsewhere):
        _write(folder / "saved_model.pb", b"partial")

    class Archive:
        def write_out(self, path, verbose=False):
            _write(tmp_path / path / "saved_model.pb", b"complete")

    final = versioned.write_archive(Archive(), str(tmp_path))
    assert sorted(os.listdir(tmp_path)) == sorted([os.path.basename(final), live.name,
                                                   elsewhere.name])


def test_squad_v2_file_without_version_2_flag(squad_files, tmp_path, caplog):
    """Scored as v1.1, a v2.0 file's unanswerable questions would count as misses: refused.
    Trained on, the original's reader points them at [CLS] in v1.1 too: a warning names it."""
    from albert_tf.squad import reader as squad_reader
    v2 = json.loads(_squad_json("q1", "q2"))
    v2["data"][0]["paragraphs"][0]["qas"][1].update(is_impossible=True, answers=[])
    path = _write(tmp_path / "dev-v2.json", json.dumps(v2))
    with pytest.raises(errors.UserInputError, match=r"--predict_file=\S+dev-v2.json: question q2 is "
                                                 r"unanswerable \(is_impossible\), a SQuAD v2.0 "
                                                 r"file; pass --version_2_with_negative"):
        _squad(squad_files, tmp_path, "--do_predict", f"--predict_file={path}")
    with caplog.at_level(logging.WARNING, logger="absl"):
        squad_reader.check_version(str(path), "--train_file", False, training=True)
    assert re.search(r"--train_file=\S+dev-v2.json: question q2 is unanswerable \(is_impossible\), "
                     r"a SQuAD v2.0 file; the v1.1 heads learn to point such questions at \[CLS\]",
                     caplog.text)


def test_wordpiece_vocabulary_without_its_special_tokens(tmp_path):
    from albert_tf.text import tokenization
    for text, message in [("", r"empty.txt: not a WordPiece vocabulary for ALBERT/BERT: it is "
                               r"empty"),
                          ("hello\nworld\n", r"words.txt: not a WordPiece vocabulary for "
                                             r"ALBERT/BERT: 2 tokens but no \[UNK\], \[CLS\], "
                                             r"\[SEP\]")]:
        name = "empty.txt" if not text else "words.txt"
        with pytest.raises(errors.UserInputError, match=message):
            tokenization.FullTokenizer(_write(tmp_path / name, text), True)


def test_wordpiece_vocabulary_that_is_not_utf8(tmp_path):
    from albert_tf.text import tokenization
    path = _write(tmp_path / "vocab.txt", b"[PAD]\n[UNK]\ncaf\xe9\n")
    with pytest.raises(errors.UserInputError, match=r"vocab.txt, line 3: not UTF-8 \(byte 0xe9 "
                                                 r"at byte offset 15\)"):
        tokenization.load_vocab(path)


def test_checkpoint_without_its_data_file(tmp_path):
    from albert_tf import checkpoints
    prefix = _classifier_checkpoint(tmp_path / "model.ckpt-7", num_labels=2)
    os.remove(prefix + ".data-00000-of-00001")
    with pytest.raises(checkpoints.CheckpointError, match=r"model.ckpt-7.data-00000-of-00001: "
                                                          r"missing; the checkpoint's index is "
                                                          r"there but not its data"):
        checkpoints.load_into(_classifier_variables(2), prefix)


@pytest.mark.slow
def test_scripts_refuse_damaged_or_mis_shaped_checkpoints(tmp_path, spm_model_file):
    """The command-line contract for the checkpoint cases: exit 2, one line, no traceback."""
    config = _config_file(tmp_path)
    _write(tmp_path / "glue" / "SST-2" / "train.tsv",
           "sentence\tlabel\na fine film\t1\na dull film\t0\n")
    _write(tmp_path / "glue" / "SST-2" / "dev.tsv", "sentence\tlabel\na good film\t1\n")
    three_labels = tmp_path / "three"
    _classifier_checkpoint(three_labels / "model.ckpt-7", num_labels=3)
    truncated = _classifier_checkpoint(tmp_path / "cut" / "model.ckpt-7", num_labels=2)
    data = open(truncated + ".data-00000-of-00001", "rb").read()
    open(truncated + ".data-00000-of-00001", "wb").write(data[:len(data) // 3])
    common = ["run_classifier.py", "--task_name=sst-2", f"--data_dir={tmp_path / 'glue'}",
              f"--spm_model_file={spm_model_file}", "--max_seq_length=32"]
    cases = [
        ((*common, f"--albert_config_file={tmp_path}", f"--output_dir={tmp_path / 'o1'}",
          "--do_train", "--allow_random_init"), r"is a directory; expected a file"),
        ((*common, f"--albert_config_file={config}", f"--output_dir={three_labels}",
          "--do_eval"), r"model.ckpt-7: shape mismatch for head variable output_weights: the "
                        r"model has \[2, 32\], the checkpoint \[3, 32\]"),
        ((*common, f"--albert_config_file={config}", f"--output_dir={tmp_path / 'o2'}",
          "--do_train", f"--init_checkpoint={truncated}", "--train_step=1",
          "--train_batch_size=2"), r"model.ckpt-7.data-00000-of-00001: truncated or corrupt "
                                   r"checkpoint data"),
    ]
    processes = [(_spawn(*args), message, args) for args, message in cases]
    for process, message, args in processes:
        _, stderr = process.communicate(timeout=300)
        assert process.returncode == 2, (args, stderr[-2000:])
        assert "Traceback" not in stderr, stderr[-2000:]
        last = [line for line in stderr.splitlines() if line.strip()][-1]
        assert last.startswith("run_classifier.py: error: ") and re.search(message, last), last
    assert not os.path.exists(three_labels / "eval_results.txt")


@pytest.mark.parametrize("flag", ["--learning_rate=inf", "--learning_rate=nan",
                                  "--eval_timeout_secs=nan", "--poly_power=inf"])
def test_float_flag_that_is_not_finite(flag):
    with pytest.raises(flags.IllegalFlagValueError, match=flag.split("=")[0].lstrip("-")):
        _training_flags(flag)


@pytest.mark.parametrize("flag", ["--warmup_proportion=nan", "--num_train_epochs=inf",
                                  "--null_score_diff_threshold=nan"])
def test_squad_float_flag_that_is_not_finite(squad_files, tmp_path, flag):
    """run_squad.py defines its flags as the other scripts do, so the same parse-time check
    refuses them (and `SquadRun.validate` refuses them for code that builds it directly)."""
    name = flag.split("=")[0]
    with pytest.raises(flags.IllegalFlagValueError, match=rf"{name} must be a finite number"):
        _squad(squad_files, tmp_path, "--do_predict", f"--predict_file={squad_files['empty']}",
               "--version_2_with_negative", flag)


@pytest.mark.parametrize("field", ["warmup_proportion", "num_train_epochs", "null_score_diff_threshold"])
def test_squad_options_built_in_code_refuse_non_finite_values(field):
    from albert_tf.squad import run as squad_run
    options = squad_run.SquadRun(version_2_with_negative=True, **{field: float("nan")})
    with pytest.raises(errors.UserInputError, match=rf"--{field}=nan: expected a finite number"):
        options.validate(64, do_train=False, do_predict=True)


def test_tagging_labels_that_changed_since_the_checkpoints(tmp_path):
    from albert_tf.tagging import reader as tagging_reader
    path = str(tmp_path / "labels.txt")
    tagging_reader.write_label_file(path, ["B-PER", "I-PER", "O"])
    tagging_reader.write_label_file(path, ["B-PER", "I-PER", "O"])  # the same data: a rerun
    with pytest.raises(errors.UserInputError, match=r"labels.txt: this output directory's "
                                                 r"checkpoints were trained with the labels "
                                                 r"\['B-PER', 'I-PER', 'O'\], the data now gives "
                                                 r"\['B-LOC', 'I-PER', 'O'\] \(added \['B-LOC'\], "
                                                 r"removed \['B-PER'\]\)"):
        tagging_reader.write_label_file(path, ["B-LOC", "I-PER", "O"])
    assert open(path).read().split() == ["B-PER", "I-PER", "O"]


def _can_mount_tmpfs():
    try:  # in a user namespace: no root needed
        probe = subprocess.run(["unshare", "-rm", "sh", "-c", "mount -t tmpfs tmpfs /mnt"],
                               capture_output=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return probe.returncode == 0


@pytest.mark.slow
@pytest.mark.skipif(not shutil.which("unshare") or not _can_mount_tmpfs(),
                    reason="needs unshare -rm and tmpfs in a user namespace")
def test_full_disk_while_training_on_a_real_small_file_system(tmp_path, spm_model_file):
    """run_classifier.py writing into a 300 KiB tmpfs: the first checkpoint does not fit. One
    line naming it, exit 2, and no temporary file or half checkpoint left."""
    _write(tmp_path / "glue" / "SST-2" / "train.tsv",
           "sentence\tlabel\na fine film\t1\na dull film\t0\n")
    (tmp_path / "small").mkdir()
    command = [sys.executable, os.path.join(REPO_ROOT, "run_classifier.py"), "--task_name=sst-2",
               f"--data_dir={tmp_path / 'glue'}", f"--albert_config_file={_config_file(tmp_path)}",
               f"--spm_model_file={spm_model_file}", f"--output_dir={tmp_path / 'small' / 'run'}",
               f"--cached_dir={tmp_path / 'cache'}", "--do_train", "--allow_random_init",
               "--max_seq_length=32", "--train_step=2", "--train_batch_size=2",
               "--save_checkpoints_steps=1"]
    script = (f"mount -t tmpfs -o size=300k tmpfs {tmp_path / 'small'} && "
              f"{' '.join(command)}; status=$?; ls -a {tmp_path / 'small' / 'run'}; exit $status")
    process = subprocess.run(["unshare", "-rm", "sh", "-c", script], cwd=REPO_ROOT,
                             env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"), capture_output=True,
                             text=True, timeout=600)
    assert process.returncode == 2, process.stderr[-2000:]
    assert "Traceback" not in process.stderr
    last = [line for line in process.stderr.splitlines() if line.strip()][-1]
    assert re.fullmatch(r"run_classifier.py: error: \S+/run/model.ckpt-1.data-00000-of-00001: no "
                        r"space left on device while writing it .*", last), last
    left = process.stdout.split()
    assert not [name for name in left if ".tmp" in name or name.startswith("model.ckpt")], left


def test_one_sentence_documents_give_one_class_and_are_refused(real_data, spm_model_file,
                                                               tmp_path):
    """A blank line after every line makes every document one sentence: no pair of real
    consecutive sentences, every instance label 1. Refused, and the records removed."""
    lines = _brown_lines(real_data, 80)
    corpus = _write(tmp_path / "in" / "spaced.txt", "\n".join(lines))
    with pytest.raises(errors.UserInputError, match=r"--input_file: all \d+ instances have "
                                                 r"sentence-order label 1 \(0 in order, 0 "
                                                 r"swapped, \d+ from another document\)"):
        create_data.create_pretraining_data(corpus, str(tmp_path / "out" / "train"),
                                            _options(spm_model_file), num_workers=1)
    assert _left_behind(tmp_path / "out") == []
    good = _write(tmp_path / "in" / "plain.txt", "".join(lines))
    summary = create_data.create_pretraining_data(good, str(tmp_path / "out" / "train"),
                                                  _options(spm_model_file), num_workers=1)
    assert 0 < summary["sentence_order"]["label_1"] < summary["instances"]
