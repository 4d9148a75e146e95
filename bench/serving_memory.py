"""The built-in server's memory under one large text request, before and after the text
signature cut each text before tokenizing (issue 51).

  python bench/serving_memory.py --reference_repo=<a worktree of the code before>

For each code version (the reference checkout, then this one) in one invocation: export a
tiny classifier with its `text` signature (max_seq_length 32, a 2,000-piece SentencePiece model
trained on Brown), start `serve.py --use_model_server=false` from that checkout, read its RSS,
send one REST predict of --texts texts totalling --megabytes MB (English words), and read the
RSS and its peak (VmHWM) again. Meanwhile another client sends 1-row predicts one after the
other (issue 51: other clients keep their latency): its latency idle, before the large
request, and while the large request runs. Writes bench/results/serving_memory.json.
"""

import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

from absl import app, flags

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import machine  # noqa: E402

flags.DEFINE_string("reference_repo", None, "A checkout of the code to compare against.")
flags.DEFINE_integer("texts", 1024, "Texts in the request.")
flags.DEFINE_integer("megabytes", 50, "Size of the request body.")
flags.DEFINE_integer("timeout_secs", 600, "Longest wait for one answer.")
FLAGS = flags.FLAGS
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXPORT = """
import sys
from albert_tf.config import AlbertConfig
from albert_tf.export import classifier as export
from albert_tf.modeling import classifier, encoder
from albert_tf.text import tf_tokenization
config = AlbertConfig(vocab_size=2000, embedding_size=16, hidden_size=32, num_hidden_layers=2,
                      num_attention_heads=4, intermediate_size=37, max_position_embeddings=64)
tokenizer = tf_tokenization.InGraphTokenizer(sys.argv[1], True)
model = classifier.AlbertClassifier(encoder.AlbertEncoder(config), 2)
export.write_saved_model(export.ClassifierSignatures(
    model, ["0", "1"], 32, False, tokenizer, tokenizer.cls_id, tokenizer.sep_id), sys.argv[2])
"""


def _memory_mb(pid):
    fields = {}
    with open(f"/proc/{pid}/status") as reader:
        for line in reader:
            key, _, value = line.partition(":")
            fields[key] = value
    return {key: int(fields[key].split()[0]) / 1024 for key in ("VmRSS", "VmHWM")}


def _body():
    words = ("the jury said it was a fine day for a walk in the park near the river "
             "and nobody there had seen anything like it before ").split()
    size = FLAGS.megabytes * 1_000_000 // FLAGS.texts
    text = " ".join(words[i % len(words)] for i in range(size // 4))[:size]
    return json.dumps({"signature_name": "text", "inputs": {
        "text_a": [text] * FLAGS.texts, "text_b": [""] * FLAGS.texts}}).encode()


SMALL_BODY = json.dumps({"signature_name": "text", "instances": [
    {"text_a": "a fine day for a walk in the park", "text_b": ""}]}).encode()


def _small_request_ms(url):
    started = time.perf_counter()
    with urllib.request.urlopen(urllib.request.Request(url, data=SMALL_BODY), timeout=600) as answer:
        answer.read()
    return (time.perf_counter() - started) * 1e3


def _latencies(url, done):
    """Milliseconds of 1-row predicts sent one after the other until `done` is set."""
    latencies = []
    while not done.is_set():
        latencies.append(_small_request_ms(url))
    return latencies


def measure(repo, spm_model, work, body):
    env = dict(os.environ, PYTHONPATH=repo)
    export_dir = os.path.join(work, "export")
    subprocess.run([sys.executable, "-c", EXPORT, spm_model, export_dir], env=env, check=True,
                   cwd=repo, capture_output=True)
    log = open(os.path.join(work, "serve.log"), "w+")
    process = subprocess.Popen(
        [sys.executable, "serve.py", f"--model_base_path={export_dir}", "--model_name=m",
         "--use_model_server=false", "--rest_api_port=0", "--port=0"],
        cwd=repo, env=env, stderr=log, stdout=log)
    try:
        deadline = time.monotonic() + 300
        while True:
            log.seek(0)
            found = re.search(r"http://[^:]+:(\d+) \(REST\)", log.read())
            if found:
                break
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"serve.py in {repo} did not start; see {log.name}")
            time.sleep(0.2)
        url = f"http://127.0.0.1:{found.group(1)}/v1/models/m:predict"
        idle = [_small_request_ms(url) for _ in range(20)]
        before = _memory_mb(process.pid)
        done, during = threading.Event(), []
        other_client = threading.Thread(target=lambda: during.extend(_latencies(url, done)))
        started = time.perf_counter()
        other_client.start()
        try:
            request = urllib.request.Request(url, data=body)
            with urllib.request.urlopen(request, timeout=FLAGS.timeout_secs) as response:
                answered = len(json.loads(response.read())["outputs"]["probabilities"])
            seconds = time.perf_counter() - started
        finally:
            done.set()
            other_client.join()
        after = _memory_mb(process.pid)
        return {"rss_before_mb": round(before["VmRSS"]), "rss_after_mb": round(after["VmRSS"]),
                "peak_rss_mb": round(after["VmHWM"]), "request_secs": round(seconds, 1),
                "rows_answered": answered,
                "other_client_idle_median_ms": round(statistics.median(idle), 1),
                "other_client_during_median_ms": round(statistics.median(during), 1),
                "other_client_during_max_ms": round(max(during), 1),
                "other_client_requests_during": len(during)}
    finally:
        process.terminate()
        process.wait(60)
        log.close()


def main(_):
    from albert_tf.demo import data_sources
    from albert_tf.text import vocab
    if not FLAGS.reference_repo:
        raise app.UsageError("--reference_repo is required (a checkout of the code before)")
    body = _body()
    runs = {}
    with tempfile.TemporaryDirectory() as work:
        brown = data_sources.fetch_all(os.path.join(REPO, "data"))["brown"][:1]
        spm_model = vocab.train_albert_spm(brown, os.path.join(work, "spm"), vocab_size=2000)
        for label, repo in (("reference", FLAGS.reference_repo), ("this", REPO)):
            os.makedirs(os.path.join(work, label))
            runs[label] = measure(os.path.abspath(repo), spm_model, os.path.join(work, label),
                                  body)
            print(label, runs[label], flush=True)
    this, reference = runs["this"], runs["reference"]
    table = [machine.row("peak RSS", "this checkout", this["peak_rss_mb"], "MB", "the reference checkout",
                         reference["peak_rss_mb"], f"idle {this['rss_before_mb']} MB"),
             machine.row("answered in", "this checkout", this["request_secs"], "s",
                         "the reference checkout", reference["request_secs"]),
             machine.row("another client's 1-row predict meanwhile, median", "this checkout",
                         this["other_client_during_median_ms"], "ms", "the reference checkout",
                         reference["other_client_during_median_ms"],
                         f"idle {this['other_client_idle_median_ms']} ms"),
             machine.row("its worst", "this checkout", this["other_client_during_max_ms"], "ms",
                         "the reference checkout", reference["other_client_during_max_ms"])]
    print(machine.write_results(
        "serving_memory", f"serve.py memory under one {len(body) / 1e6:.0f} MB REST predict of "
        f"{FLAGS.texts} texts (text signature, max_seq_length 32)", table, lambda entry: True,
        {"texts": FLAGS.texts, "megabytes": FLAGS.megabytes, "runs": runs}))


if __name__ == "__main__":
    app.run(main)
