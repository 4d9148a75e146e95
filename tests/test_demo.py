"""`make demo` in CI's conditions: the whole pipeline with fewer steps (`--quick`), run twice."""

import json
import os
import subprocess
import sys
import tarfile

import pytest

from albert_tf.demo import data_sources
from tests.conftest import REPO_ROOT


def _run_demo(data_dir, output_dir):
    result = subprocess.run(
        [sys.executable, "-m", "albert_tf.demo.pipeline", f"--data_dir={data_dir}",
         f"--output_dir={output_dir}", "--quick"],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=1800)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    with open(os.path.join(output_dir, "summary.json")) as reader:
        return result.stdout, json.load(reader)


@pytest.mark.slow
def test_quick_demo_runs_every_step_and_a_second_run_reuses_the_built_data(real_data, tmp_path):
    data_dir = os.path.dirname(real_data["botchan"])
    output_dir = str(tmp_path / "demo")
    stdout, summary = _run_demo(data_dir, output_dir)

    for step in ("build_vocab.py", "create_pretraining_data.py", "run_pretraining.py",
                 "run_classifier.py", "serve.py"):
        assert f" {step} " in stdout, f"{step} was not shown as a command"
    for path in summary["artefacts"].values():
        assert os.path.exists(path), path
    exported_run = summary["artefacts"]["classifier_checkpoints"]
    assert exported_run == os.path.join(output_dir, "fine_tuning", "pretrained-seed1")
    assert os.path.exists(os.path.join(exported_run, "model.ckpt-best.index"))
    assert os.path.exists(os.path.join(exported_run, "submit_results.tsv"))
    for init in ("pretrained", "random_init"):
        assert os.path.exists(os.path.join(output_dir, "fine_tuning", f"{init}-seed1", "eval_results.txt"))

    curve = summary["pretraining_loss"]
    assert curve["last"] < curve["first"], curve
    assert {"masked_lm_accuracy", "sentence_order_accuracy", "masked_lm_loss"} <= set(
        summary["pretraining_eval"])
    assert 0.0 <= float(summary["fine_tuning_eval"]["eval_accuracy"]) <= 1.0
    assert [item["label"] for item in summary["classified"]] and all(
        item["label"] in ("0", "1") for item in summary["classified"])
    assert summary["tensorboard"] == f"tensorboard --logdir {output_dir}"
    _check_curves_png(summary["curves"], os.path.join(output_dir, "curves.png"))

    gain = summary["pretraining_gain"]
    assert gain["metric"] == "eval_accuracy"
    assert len(gain["pretrained"]) == len(gain["random_init"]) == 1  # --quick: one seed each
    counted = gain["with_collapses"]  # one seed: the gain with the runs counted, and no verdict
    assert counted["gain"] == pytest.approx(gain["pretrained"][0] - gain["random_init"][0], abs=1e-3)
    assert gain["verdict"] == "not resolved" and gain["pretraining_seeds"] == 1
    assert gain["pretrained"][0] == pytest.approx(float(summary["fine_tuning_eval"]["eval_accuracy"]))
    for init in ("pretrained", "random_init"):
        assert f"4-fine-tuning-{init.replace('_', '-')}-seed1: " in stdout, init
    assert summary["cpu"]["precision"] in ("float32", "mixed_bfloat16")
    fine_tuning_commands = [line for line in stdout.splitlines()
                            if line.startswith("$ ") and "run_classifier.py" in line]
    assert len(fine_tuning_commands) == 4 and all(  # the CPU check's precision, as pretraining
        f"--precision={summary['cpu']['precision']}" in line for line in fine_tuning_commands)
    replicas = summary["cpu"]["cpu_replicas"]
    assert f"--cpu_replicas={replicas}" in stdout and summary["cpu"]["cpu_replicas_reason"] in stdout
    assert summary["seconds"]["total"] >= summary["seconds"]["pretraining"]
    # the full comparison and the 50-sentence one (--quick), each one seed from the checkpoint
    assert "--allow_random_init" in stdout and stdout.count("--init_checkpoint=") == 2
    efficiency = summary["data_efficiency"]
    assert list(efficiency) == ["all", "50"]
    assert efficiency["all"]["pretrained"] == gain["pretrained"]
    for cell in efficiency.values():
        assert len(cell["pretrained"]) == len(cell["random_init"]) == 1 and cell["gain_se"] is None
        assert set(cell["collapsed"]) == {"pretrained", "random_init"} and 0.5 < cell["majority_rate"] < 1
    with open(os.path.join(output_dir, "glue_n50_seed1", "SST-2", "train.tsv")) as reader:
        assert len(reader.read().splitlines()) == 51  # the header and the seed's 50 sentences
    assert "data efficiency" in stdout and "50: pretrained " in stdout

    _, second = _run_demo(data_dir, output_dir)
    assert list(second["seconds"]) == ["total"], second["seconds"]  # every finished step reused
    assert second["pretraining_loss"]["logged_loops"] == 0
    assert second["pretraining_gain"] == gain
    assert [item["label"] for item in second["classified"]] == [
        item["label"] for item in summary["classified"]]


def test_the_gain_is_paired_by_seed_with_its_standard_error():
    from albert_tf.demo import pipeline
    gain = pipeline.pretraining_gain("eval_accuracy", [0.70, 0.80], [0.60, 0.61], 0.54)
    assert gain["gain"] == pytest.approx(0.145) and gain["gain_se"] == pytest.approx(0.045)
    assert gain["pretrained_std"] == pytest.approx(0.0707, abs=1e-4)
    assert pipeline.pretraining_gain("eval_accuracy", [0.7], [0.6], 0.54)["gain_se"] is None
    # a random-init run at the majority rate (54%) collapsed: its seed leaves the mean and the
    # gain, which rests on the one seed left (no standard error, not resolved)
    gain = pipeline.pretraining_gain("eval_accuracy", [0.70, 0.80], [0.60, 0.541], 0.54)
    assert gain["collapsed"] == {"pretrained": 0, "random_init": 1} and gain["kept_seeds"] == 1
    assert gain["gain"] == pytest.approx(0.10) and gain["random_init_mean"] == pytest.approx(0.60)
    assert gain["verdict"] == "not resolved" and gain["with_collapses"]["gain"] == pytest.approx(0.1795)


def _check_curves_png(path, expected_path):
    """A real picture: a PNG of three panels, with lines drawn in colour on white."""
    from matplotlib import image
    assert path == expected_path
    with open(path, "rb") as reader:
        assert reader.read(8) == b"\x89PNG\r\n\x1a\n"
    pixels = image.imread(path)[..., :3]
    assert pixels.shape[0] >= 300 and pixels.shape[1] >= 3 * pixels.shape[0]
    coloured = (pixels.max(axis=-1) - pixels.min(axis=-1)) > 0.3  # neither white nor grey
    assert coloured.mean() > 0.002, coloured.mean()


def test_each_step_shows_its_log_path_first_then_its_progress_live(tmp_path, capsys):
    """A long step (11 minutes of pretraining) must not look hung: the log path comes first,
    then every absl message of the script as it is written; native start-up lines stay in the
    log only."""
    from albert_tf.demo import steps
    code = ("import sys, time\n"
            "from absl import app, logging\n"
            "def main(argv):\n"
            "    logging.set_verbosity(logging.INFO)\n"
            "    print('I0000 00:00:1795627558.3 17459 port.cc:153] oneDNN custom operations are on',"
            " file=sys.stderr)\n"
            "    logging.info('step 40/800: loss = 9.5, masked_lm_loss = 8.8, ETA 0:05:00')\n"
            "    logging.info('*** Example train-1 ***')\n"
            "    logging.warning('x' * 400)\n"
            "    print('UserWarning: something odd', file=sys.stderr)\n"
            "app.run(main)\n")
    steps.run_step("3-pretraining", [sys.executable, "-c", code], str(tmp_path))
    shown = capsys.readouterr().out.splitlines()
    log_path = str(tmp_path / "3-pretraining.log")
    assert shown[1] == "=== 3-pretraining" and shown[2].startswith("$ ")
    first = shown.index(f"    (full log: {log_path})")
    progress = [line.split("] ", 1)[1] for line in shown[first + 1:-1]]
    assert progress == ["step 40/800: loss = 9.5, ETA 0:05:00", "x" * 149 + "…",
                        "UserWarning: something odd"]
    assert shown[-1].startswith("    done in ")
    with open(log_path) as log:
        text = log.read()
    assert "oneDNN custom operations" in text and "x" * 400 in text


def test_a_registry_package_without_the_expected_file_is_named(tmp_path):
    """A package version whose sdist no longer holds the data file fails naming both."""
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    (tmp_path / "README").write_text("no data here\n")
    with tarfile.open(downloads / "sentencepiece-0.2.1.tar.gz", "w:gz") as archive:
        archive.add(tmp_path / "README", arcname="sentencepiece-0.2.1/README")
    with pytest.raises(data_sources.FetchError,
                       match=r"sentencepiece-0\.2\.1\.tar\.gz: no test/botchan\.txt inside"):
        data_sources.fetch_botchan(str(tmp_path))
    assert not (tmp_path / "botchan.txt").exists()


def test_two_pretraining_replicas_only_on_a_quiet_machine_of_two_cores_or_more():
    from albert_tf.demo import machine
    assert machine.pretraining_replicas(2, 0.3)[0] == 2
    assert machine.pretraining_replicas(2, 1.99)[0] == 2
    assert machine.pretraining_replicas(16, 12.0)[0] == 2
    replicas, why = machine.pretraining_replicas(2, 2.0)
    assert replicas == 1 and "load average 2.00 >= 2 cores" in why
    assert machine.pretraining_replicas(1, 0.0) == (1, "1 core: nothing to split")
