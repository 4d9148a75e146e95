"""create_pretraining_data: determinism across workers and runs, output modes, bad input,
non-UTF-8 input, and a killed run (the CLI in a subprocess)."""

import collections
import glob
import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest
import tensorflow as tf

from albert_tf.pretraining import create_data
from albert_tf.pretraining import options as options_lib
from albert_tf.pretraining import summary as summary_lib
from tests import killed_runs

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module")
def small_inputs(real_data, tmp_path_factory):
    """Three real input files: the first 400 lines of three Brown shards (several documents)."""
    directory = tmp_path_factory.mktemp("inputs")
    paths = []
    for i, source in enumerate(real_data["brown"][:3]):
        with open(source, encoding="utf-8") as handle:
            lines = handle.read().split("\n")[:400 + 100 * i]
        path = directory / f"part-{i}.txt"
        path.write_text("\n".join(lines), encoding="utf-8")
        paths.append(str(path))
    return paths


def _options(spm_model_file, **overrides):
    settings = dict(spm_model_file=spm_model_file, max_seq_length=64, max_predictions_per_seq=10,
                    dupe_factor=2, shuffle_buffer_size=50)
    settings.update(overrides)
    return options_lib.DataOptions(**settings)


def _visible_files(directory):
    return sorted(name for name in os.listdir(directory) if not name.startswith("."))


def _read_bytes(directory):
    return {name: open(os.path.join(directory, name), "rb").read()
            for name in _visible_files(directory) if not name.endswith(".json")}


def _records(path):
    return [raw.numpy() for raw in tf.data.TFRecordDataset(path)]


@pytest.mark.slow
def test_byte_identical_whatever_num_workers_and_across_runs(small_inputs, spm_model_file,
                                                             tmp_path):
    pattern = os.path.join(os.path.dirname(small_inputs[0]), "part-*.txt")
    results = {}
    for mode, outputs in (("per_input", "out.tfrecord"), ("round_robin", "a.tfrecord,b.tfrecord")):
        for run, workers in (("w1", 1), ("w2", 2), ("w2-again", 2)):
            directory = tmp_path / mode / run
            output = ",".join(str(directory / name) for name in outputs.split(","))
            summary = create_data.create_pretraining_data(
                pattern, output, _options(spm_model_file), num_workers=workers)
            assert summary["num_workers"] == workers
            results[mode, run] = _read_bytes(directory)
        assert results[mode, "w1"] == results[mode, "w2"] == results[mode, "w2-again"]
    per_input = results["per_input", "w1"]
    assert sorted(per_input) == [f"out.tfrecord-0000{i}-of-00003" for i in range(3)]
    round_robin = results["round_robin", "w1"]
    assert sorted(round_robin) == ["a.tfrecord", "b.tfrecord"]
    # The same instances, arranged differently: round-robin over one interleaved stream.
    by_mode = {}
    for mode in ("per_input", "round_robin"):
        records = []
        for name in sorted(results[mode, "w1"]):
            records.extend(_records(str(tmp_path / mode / "w1" / name)))
        by_mode[mode] = collections.Counter(records)
    assert by_mode["per_input"] == by_mode["round_robin"]
    a, b = (_records(str(tmp_path / "round_robin" / "w1" / n)) for n in ("a.tfrecord", "b.tfrecord"))
    assert len(a) - len(b) in (0, 1)
    shards = [_records(str(tmp_path / "per_input" / "w1" / f"out.tfrecord-0000{i}-of-00003"))
              for i in range(3)]
    # Interleaving file 0, 1, 2, 0, 1, 2, ...: the first three records of a and b.
    assert [a[0], b[0], a[1]] == [shards[0][0], shards[1][0], shards[2][0]]


def test_a_file_gives_the_same_records_alone_or_with_others(small_inputs, spm_model_file,
                                                            tmp_path):
    together = create_data.create_pretraining_data(
        ",".join(small_inputs), str(tmp_path / "all" / "out"), _options(spm_model_file),
        num_workers=1)
    alone = create_data.create_pretraining_data(
        small_inputs[1], str(tmp_path / "one" / "out"), _options(spm_model_file), num_workers=1)
    assert open(tmp_path / "one" / "out", "rb").read() == open(
        tmp_path / "all" / "out-00001-of-00003", "rb").read()
    assert alone["instances"] == together["input_files"][1]["instances"]


def test_summary_and_instance_counts(small_inputs, spm_model_file, tmp_path):
    output = str(tmp_path / "data" / "train.tfrecord")
    summary = create_data.create_pretraining_data(
        ",".join(small_inputs), output, _options(spm_model_file), num_workers=1)
    with open(output + ".summary.json") as handle:
        assert json.load(handle) == summary
    shards = sorted(glob.glob(output + "-*"))
    counts = {os.path.basename(p): len(_records(p)) for p in shards}
    assert summary["output_files"] == counts
    assert summary["instances"] == sum(counts.values()) > 0
    assert summary["features"] == {"max_seq_length": 64, "max_predictions_per_seq": 10}
    assert summary["input"]["files"] == 3 and summary["input"]["replaced_bytes"] == 0
    assert summary["tokens"] == sum(
        sum(tf.train.Example.FromString(r).features.feature["input_mask"].int64_list.value)
        for p in shards for r in _records(p))
    # Training reads the count back through the summary (the glob also matches the summary).
    assert summary_lib.count_instances(output + "*") == summary["instances"]
    # Without a summary the frames are counted.
    os.remove(output + ".summary.json")
    assert summary_lib.count_instances(output + "*") == summary["instances"]


def test_permutation_doubles_the_masked_lm_length(small_inputs, spm_model_file, tmp_path):
    output = str(tmp_path / "perm")
    summary = create_data.create_pretraining_data(
        small_inputs[0], output, _options(spm_model_file, do_permutation=True), num_workers=1)
    assert summary["features"]["max_predictions_per_seq"] == 20
    features = tf.train.Example.FromString(_records(output)[0]).features.feature
    assert len(features["masked_lm_positions"].int64_list.value) == 20


def test_non_utf8_bytes_are_replaced_and_counted(small_inputs, spm_model_file, tmp_path):
    text = open(small_inputs[0], "rb").read()
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"Caf\xe9 au lait \xff\xfe here.\n" + text + b"\nend \xe2\x96")
    summary = create_data.create_pretraining_data(
        str(bad), str(tmp_path / "out"), _options(spm_model_file), num_workers=1)
    assert summary["input"]["replaced_bytes"] == 1 + 2 + 2
    assert summary["input_files"][0]["replaced_bytes"] == 5
    assert summary["instances"] > 0 and os.path.exists(tmp_path / "out")


def test_wordpiece_vocabulary(small_inputs, tmp_path):
    """--vocab_file without --spm_model_file: the BERT tokenizer and the "##" start rule."""
    words = collections.Counter()
    for line in open(small_inputs[0], encoding="utf-8"):
        words.update(line.lower().split())
    letters = sorted({c for w in words for c in w})
    vocab = (["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + letters + [f"##{c}" for c in letters]
             + [w for w, _ in words.most_common(300) if w.isalpha()])
    vocab_file = tmp_path / "vocab.txt"
    vocab_file.write_text("\n".join(dict.fromkeys(vocab)) + "\n", encoding="utf-8")
    output = str(tmp_path / "wp")
    summary = create_data.create_pretraining_data(
        small_inputs[0], output, _options(None, vocab_file=str(vocab_file)), num_workers=1)
    ids = {token: i for i, token in enumerate(dict.fromkeys(vocab))}
    continuation = {i for token, i in ids.items() if token.startswith("##")}
    seen_continuation = 0
    for raw in _records(output):
        features = tf.train.Example.FromString(raw).features.feature
        n = sum(features["input_mask"].int64_list.value)
        tokens = list(features["input_ids"].int64_list.value[:n])
        k = int(sum(features["masked_lm_weights"].float_list.value))
        for p, label in zip(features["masked_lm_positions"].int64_list.value[:k],
                            features["masked_lm_ids"].int64_list.value[:k]):
            tokens[p] = label
        boundary = features["token_boundary"].int64_list.value[:n]
        for i, t in enumerate(tokens):
            if t not in (ids["[CLS]"], ids["[SEP]"]):
                assert boundary[i] == (0 if t in continuation else 1)
        seen_continuation += sum(t in continuation for t in tokens)
    assert summary["instances"] > 0 and seen_continuation > 0


@pytest.mark.parametrize("make_input, overrides, message", [
    (lambda d: str(d / "missing.txt"), {}, r"--input_file: file .*missing.txt does not exist"),
    (lambda d: str(d / "nothing-*.txt"), {}, r"--input_file: pattern '.*nothing-\*.txt' matched no file"),
    (lambda d: _write(d / "empty.txt", b""), {}, r"empty.txt: input file is empty"),
    (lambda d: _write(d / "blank.txt", b"\n\n  \n"), {}, r"blank.txt: input file contains no text"),
    (lambda d: _write(d / "ok.txt", b"One line.\nTwo lines.\n"),
     {"spm_model_file": "BROKEN"}, r"broken.model: not a valid SentencePiece model file"),
    (lambda d: _write(d / "ok.txt", b"One line.\n"),
     {"spm_model_file": "MISSING"}, r"absent.model: .*file not found"),
    (lambda d: _write(d / "ok.txt", b"One line.\n"),
     {"max_predictions_per_seq": 0}, r"--max_predictions_per_seq=0 is too small"),
])
def test_bad_input_is_named(make_input, overrides, message, spm_model_file, tmp_path):
    settings = {"spm_model_file": spm_model_file, **overrides}
    if settings["spm_model_file"] == "BROKEN":
        settings["spm_model_file"] = _write(tmp_path / "broken.model", b"not a model")
    elif settings["spm_model_file"] == "MISSING":
        settings["spm_model_file"] = str(tmp_path / "absent.model")
    options = _options(**settings)
    with pytest.raises((ValueError, OSError), match=message):
        create_data.create_pretraining_data(make_input(tmp_path), str(tmp_path / "out" / "x"),
                                            options, num_workers=1)
    assert not os.path.exists(tmp_path / "out") or os.listdir(tmp_path / "out") == []


def test_a_failure_in_a_later_file_writes_nothing(small_inputs, spm_model_file, tmp_path):
    blank = _write(tmp_path / "zz-blank.txt", b"\n \n")
    with pytest.raises(ValueError, match="zz-blank.txt: input file contains no text"):
        create_data.create_pretraining_data(
            f"{small_inputs[0]},{blank}", str(tmp_path / "out" / "x"), _options(spm_model_file),
            num_workers=1)
    assert os.listdir(tmp_path / "out") == []  # Not even hidden temporaries.


def test_a_worker_error_reaches_the_parent(small_inputs, spm_model_file, tmp_path):
    blank = _write(tmp_path / "zz-blank.txt", b"\n \n")
    with pytest.raises(ValueError, match="zz-blank.txt: input file contains no text") as error:
        create_data.create_pretraining_data(
            f"{small_inputs[0]},{small_inputs[1]},{blank}", str(tmp_path / "out" / "x"),
            _options(spm_model_file), num_workers=2)
    assert any("in a data worker process" in note for note in error.value.__notes__)
    assert os.listdir(tmp_path / "out") == []


def _worker_pids():
    pids = []
    for child in open(f"/proc/{os.getpid()}/task/{os.getpid()}/children").read().split():
        try:
            if b"albert_tf.pretraining.workers" in open(f"/proc/{child}/cmdline", "rb").read():
                pids.append(int(child))
        except OSError:
            pass
    return pids


def test_a_killed_worker_is_reported_with_its_file(real_data, spm_model_file, tmp_path):
    killed = []

    def kill_a_worker():
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not killed:
            pids = _worker_pids()
            if pids:
                time.sleep(0.5)  # Inside its first file.
                os.kill(pids[0], signal.SIGKILL)
                killed.append(pids[0])
            time.sleep(0.02)

    killer = threading.Thread(target=kill_a_worker)
    killer.start()
    try:
        with pytest.raises(RuntimeError, match=r"data worker process \d+ died with exit code -9 "
                                               r"while processing .*brown-0\d.txt"):
            create_data.create_pretraining_data(
                ",".join(real_data["brown"]), str(tmp_path / "out" / "x"),
                _options(spm_model_file, dupe_factor=20), num_workers=2)
    finally:
        killer.join()
    assert killed and _worker_pids() == []  # The other worker was ended too.
    assert not (tmp_path / "out").exists() or os.listdir(tmp_path / "out") == []


def _write(path, data):
    path.write_bytes(data)
    return str(path)


def _cli(*args):
    return [sys.executable, os.path.join(REPO_ROOT, "create_pretraining_data.py"), *args]


@pytest.mark.slow
def test_cli_error_and_killed_run(real_data, spm_model_file, tmp_path):
    """The CLI exits with the message for bad input; a killed run leaves no final file."""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    result = subprocess.run(
        _cli(f"--input_file={tmp_path}/nope.txt", f"--output_file={tmp_path}/o",
             f"--spm_model_file={spm_model_file}"),
        capture_output=True, text=True, env=env, cwd=REPO_ROOT)
    assert result.returncode != 0
    assert f"--input_file: file {tmp_path}/nope.txt does not exist" in result.stderr

    out_dir = tmp_path / "killed"
    killed_runs.kill_while_writing(
        _cli(f"--input_file={','.join(real_data['brown'])}", f"--output_file={out_dir}/train",
             f"--spm_model_file={spm_model_file}", "--dupe_factor=20", "--max_seq_length=128",
             "--shuffle_buffer_size=10", "--num_workers=2"),
        out_dir, cwd=REPO_ROOT, env=env, timeout=120)
    names = os.listdir(out_dir)
    assert any(".tmp-" in name for name in names)
    assert _visible_files(out_dir) == []
