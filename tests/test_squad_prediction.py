"""SQuAD answer prediction under a strategy: 2 logical CPUs and length buckets give the answers,
scores and raw outputs of one device with padded batches."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from tests.conftest import REPO_ROOT
from tests.test_run_squad import squad_json


@pytest.mark.slow
def test_two_replicas_and_buckets_predict_what_one_device_does(tmp_path, spm_model_file):
    squad_file = tmp_path / "v2.json"
    squad_file.write_text(json.dumps(squad_json(True)))
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=REPO_ROOT, CUDA_VISIBLE_DEVICES="")
    done = subprocess.run([sys.executable, os.path.join(REPO_ROOT, "tests", "squad_distributed.py"),
                           str(squad_file), spm_model_file, str(tmp_path / "out")],
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    line = next(l for l in done.stdout.splitlines() if l.startswith("RESULT "))
    results = json.loads(line[len("RESULT "):])
    reference = results["one_device"]
    assert len(reference["unique_ids"]) == results["features"] > 5  # several batches of 5
    assert reference["unique_ids"] == sorted(reference["unique_ids"])
    for name in ("mirrored", "mirrored_bucketed"):
        other = results[name]
        assert other["unique_ids"] == reference["unique_ids"], name
        assert other["end_top_index"] == reference["end_top_index"], name
        for key in ("start_top_log_probs", "cls_logits"):
            np.testing.assert_allclose(other[key], reference[key], atol=1e-5, err_msg=name)
        assert other["scores"] == reference["scores"], name
    assert reference["scores"]["total"] == 9
