"""Every script command shown in README.md and docs/ names a script that exists and only flags it
defines; every relative link there points at a file of the repository.

The README's and the docs' examples are what users copy; a renamed or mistyped flag there is a bug.
"""

import fnmatch
import glob
import json
import os
import re
import shlex
import subprocess
import sys

import pytest

from tests.conftest import REPO_ROOT

_COMMAND = re.compile(r"python3?\s+(\S+\.py)\b(.*)")
_FLAG = re.compile(r"(?<![\w-])--([A-Za-z_][\w]*)")


def documentation_files():
    return [os.path.join(REPO_ROOT, "README.md")] + sorted(
        glob.glob(os.path.join(REPO_ROOT, "docs", "*.md")))


_BEAM_OPTIONS = re.compile(r"""--beam_options=("[^"]*"|'[^']*'|\S+)""")


def readme_commands(paths=None):
    """{script: set of flag names} over the fenced code blocks of README.md (or `paths`),
    continuation lines joined."""
    commands = {}
    for path in paths or [os.path.join(REPO_ROOT, "README.md")]:
        with open(path, encoding="utf-8") as reader:
            _add_commands(reader.read(), commands)
    return commands


def _add_commands(text, commands):
    for block in re.findall(r"^```[^\n]*\n(.*?)^```", text, flags=re.S | re.M):
        joined = re.sub(r"\\\n\s*", " ", block)
        for line in joined.splitlines():
            match = _COMMAND.search(line)
            if match and not match.group(1).startswith(("bench/", "-m")):
                # --beam_options' value holds Beam's own pipeline options, not the script's flags
                arguments = _BEAM_OPTIONS.sub("--beam_options", match.group(2))
                commands.setdefault(match.group(1), set()).update(_FLAG.findall(arguments))


def defined_flags(script_output):
    return set(re.findall(r"^\s+--(?:\[no\])?([\w]+)[:\s]", script_output, flags=re.M))


def test_readme_shows_the_main_scripts():
    commands = readme_commands()
    for script in ("build_vocab.py", "create_pretraining_data.py", "run_pretraining.py",
                   "run_classifier.py", "serve.py"):
        assert script in commands, f"README.md shows no command for {script}"


@pytest.mark.slow
def test_readme_commands_use_defined_flags():
    commands = readme_commands(documentation_files())
    processes = {}
    for script in sorted(commands):
        path = os.path.join(REPO_ROOT, script)
        assert os.path.isfile(path), f"README.md runs {script}, which does not exist"
        processes[script] = subprocess.Popen(
            [sys.executable, path, "--helpfull"], cwd=REPO_ROOT, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True)
    problems = []
    for script, process in processes.items():
        output, _ = process.communicate(timeout=600)
        known = defined_flags(output)
        assert known, f"{script} --helpfull listed no flags:\n{output[-2000:]}"
        for flag in sorted(commands[script]):
            name = flag[2:] if flag.startswith("no") and flag[2:] in known else flag
            if name not in known:
                problems.append(f"{script}: --{flag}")
    assert not problems, "README.md or docs/ use flags the scripts do not define: " + ", ".join(problems)


def test_readme_is_short_and_links_resolve():
    with open(os.path.join(REPO_ROOT, "README.md"), encoding="utf-8") as reader:
        assert len(reader.read().splitlines()) <= 250, "README.md: keep it within 250 lines (details go to docs/)"
    broken = []
    for path in documentation_files():
        with open(path, encoding="utf-8") as reader:
            text = reader.read()
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
            if "://" in target:
                continue
            if not os.path.exists(os.path.join(os.path.dirname(path), target)):
                broken.append(f"{os.path.relpath(path, REPO_ROOT)} -> {target}")
    assert not broken, "broken links: " + ", ".join(broken)


def test_sections_and_pages_the_code_cites_exist():
    """A script's --help (its docstring) or a message that sends the reader to README.md's
    "<section>" (a `##` heading or a bold paragraph label such as **Pretraining**) or to a
    docs/ page must not send them nowhere."""
    with open(os.path.join(REPO_ROOT, "README.md"), encoding="utf-8") as reader:
        readme = reader.read()
    sections = set(re.findall(r"^#+ (.+?)\s*$", readme, flags=re.M))
    sections |= set(re.findall(r"^\*\*(.+?)\*\*", readme, flags=re.M))
    cited, missing = set(), []
    for path in glob.glob(os.path.join(REPO_ROOT, "*.py")) + glob.glob(
            os.path.join(REPO_ROOT, "albert_tf", "**", "*.py"), recursive=True):
        with open(path, encoding="utf-8") as reader:
            text = reader.read()
        where = os.path.relpath(path, REPO_ROOT)
        for section in re.findall(r"README(?:\.md)?,\s+\"([^\"]+)\"", text):
            cited.add(section)
            if section not in sections:
                missing.append(f"{where}: README.md section {section!r}")
        for page in re.findall(r"\bdocs/[\w.-]+\.md\b", text):
            cited.add(page)
            if not os.path.isfile(os.path.join(REPO_ROOT, page)):
                missing.append(f"{where}: {page}")
    assert "Pretraining" in cited and "docs/glue.md" in cited  # the search finds citations
    assert not missing, "cited but absent: " + ", ".join(missing)


def test_make_test_fetches_the_data_once_and_ends_on_the_main_suite():
    """README's `make test` (CI's command, which reads pytest's closing line): `data` runs once,
    the transformers 5 tests run, and the main suite's pytest comes last."""
    # Under CI's own `make test`, MAKELEVEL and MAKEFLAGS would make this make print its
    # "Entering/Leaving directory" lines: run it as a user's top-level make.
    env = {key: value for key, value in os.environ.items()
           if key not in ("MAKELEVEL", "MAKEFLAGS", "MFLAGS")}
    lines = subprocess.run(["make", "-n", "test"], cwd=REPO_ROOT, capture_output=True, env=env,
                           text=True, check=True, timeout=60).stdout.splitlines()
    assert sum("albert_tf.demo.data_sources" in line for line in lines) == 1, lines
    assert lines[-1] == (".venv/bin/python -m pytest -q -n 2 --dist loadfile "
                         "--no-loadscope-reorder --durations=25 tests"), lines[-3:]
    assert any(line.startswith(".venv-hf5/bin/python -m pytest") for line in lines[:-1])


def test_no_references_to_sections_outside_the_repository():
    """Docs and code state facts themselves; a "§" pointing at a document a reader cannot open
    is a dead end."""
    offenders = []
    for pattern in ("*.md", "docs/*.md", "*.py", "albert_tf/**/*.py", "tests/*.py", "bench/*.py",
                    "*.sh"):
        for path in glob.glob(os.path.join(REPO_ROOT, pattern), recursive=True):
            if os.path.abspath(path) == os.path.abspath(__file__):
                continue
            with open(path, encoding="utf-8") as reader:
                for number, line in enumerate(reader, 1):
                    if "\u00a7" in line or "original_release.md" in line:
                        offenders.append(f"{os.path.relpath(path, REPO_ROOT)}:{number}")
    assert not offenders, "references to an external specification: " + ", ".join(offenders)


# ---------------------------------------------------------------- the command chains, run


def fenced_commands(path):
    """[(script, argv after the script)] of every `python <script>.py ...` line in the fenced
    blocks of `path`, continuation lines joined and trailing `# comments` dropped, in order."""
    with open(path, encoding="utf-8") as reader:
        text = reader.read()
    commands = []
    for block in re.findall(r"^```[^\n]*\n(.*?)^```", text, flags=re.S | re.M):
        for line in re.sub(r"\\\n\s*", " ", block).splitlines():
            if re.match(r"python3?\s+[\w/]+\.py\b", line):
                words = shlex.split(line, comments=True)
                commands.append((words[1], words[2:]))
    return commands


def _flag_values(argv, name):
    return [word.split("=", 1)[1] for word in argv if word.startswith(f"--{name}=")]


_PATH_FLAGS = {"input", "input_file", "output_file", "model_prefix", "output_dir", "data_dir",
               "export_dir", "init_checkpoint", "spm_model_file", "hf_model_dir"}


def test_folders_of_the_readme_commands_are_ignored_by_git():
    """Running the README's commands in the checkout (user inputs corpus/ and glue_data/, the
    outputs vocab/, pretrain/, out/...) leaves no untracked folder for `git status` to show."""
    with open(os.path.join(REPO_ROOT, ".gitignore"), encoding="utf-8") as reader:
        ignored = {line.strip().strip("/") for line in reader if line.strip()}
    roots = set()
    for _, argv in fenced_commands(os.path.join(REPO_ROOT, "README.md")):
        for name, value in (word[2:].split("=", 1) for word in argv
                            if word.startswith("--") and "=" in word):
            root = value.split("/")[0]
            if name in _PATH_FLAGS and not os.path.isfile(
                    os.path.join(REPO_ROOT, root, "__init__.py")):
                roots.add(root)
    assert {"corpus", "glue_data", "vocab", "pretrain", "pretrain_out", "out"} <= roots
    assert not roots - ignored, f"not in .gitignore: {sorted(roots - ignored)}"


def test_docs_pretraining_globs_match_the_files_the_data_command_writes():
    """`run_pretraining.py --input_file=<glob>` must pick up what `create_pretraining_data.py
    --output_file=<path>` beside it writes: the path itself for one input file,
    `<path>-00000-of-0000N`, ... for N (a `train-*.tfrecord` glob matched neither)."""
    from albert_tf.pretraining import outputs
    checked, problems = 0, []
    for path in documentation_files():
        commands = fenced_commands(path)
        written = [output for script, argv in commands if script == "create_pretraining_data.py"
                   for value in _flag_values(argv, "output_file") if "," not in value
                   for count in (1, 3) for output in outputs.plan_outputs(value, count).outputs]
        for script, argv in commands:
            if script != "run_pretraining.py":
                continue
            for pattern in (p for value in _flag_values(argv, "input_file") for p in value.split(",")):
                same_dir = [out for out in written if os.path.dirname(out) == os.path.dirname(pattern)]
                checked += bool(same_dir)
                missed = [out for out in same_dir
                          if not fnmatch.fnmatchcase(os.path.basename(out), os.path.basename(pattern))]
                if missed:
                    problems.append(f"{os.path.relpath(path, REPO_ROOT)}: --input_file={pattern} "
                                    f"misses {missed}")
    assert checked, "no create_pretraining_data.py → run_pretraining.py chain found in the docs"
    assert not problems, "; ".join(problems)


CPU_CHAIN_HEADING = "## A first run on a CPU, in minutes"

# The README's chain with fewer steps: the only changes the test makes, each to a flag the README
# shows (and the server's ports, to free ones).
FEWER_STEPS = {"num_train_steps": "4", "num_warmup_steps": "1", "train_step": "4",
               "warmup_step": "1", "save_checkpoints_steps": "4", "iterations_per_loop": "2"}


def cpu_chain():
    """The command lines of the fenced block under README.md's CPU heading, continuation lines
    joined, as shlex words (quotes and trailing `# comments` as a shell reads them)."""
    with open(os.path.join(REPO_ROOT, "README.md"), encoding="utf-8") as reader:
        section = reader.read().split(CPU_CHAIN_HEADING + "\n", 1)[1].split("\n## ", 1)[0]
    (block,) = re.findall(r"^```[^\n]*\n(.*?)^```", section, flags=re.S | re.M)
    return [shlex.split(line, comments=True)
            for line in re.sub(r"\\\n\s*", " ", block).splitlines() if line.strip()]


def _changed(words, changes):
    """`words` with the value of each `--name=value` named in `changes` replaced."""
    result = []
    for word in words:
        name = word[2:].split("=", 1)[0] if word.startswith("--") and "=" in word else None
        result.append(f"--{name}={changes[name]}" if name in changes else word)
    return result


def test_readme_cpu_chain_goes_from_the_data_to_a_served_classifier():
    """The CPU chain starts from `make data`'s files, runs every job once in order with the
    shipped small config, and ends with a curl to the server it starts; the README gives its
    measured time."""
    lines = cpu_chain()
    programs = [words[1] if words[0] == "python" and words[1] != "-m" else
                words[2] if words[0] == "python" else words[0] for words in lines]
    assert programs == ["albert_tf.glue.movie_reviews_task", "build_vocab.py",
                        "create_pretraining_data.py", "run_pretraining.py", "run_classifier.py",
                        "serve.py", "serve.py", "curl"], programs
    flags_given = {word.split("=", 1)[0] for words in lines for word in words if "=" in word}
    assert {"--num_train_steps", "--train_step"} <= flags_given
    configs = {word.split("=", 1)[1] for words in lines for word in words
               if word.startswith("--albert_config_file=")}
    assert configs == {"albert_tf/configs/albert_tiny_cpu.json"}
    assert os.path.isfile(os.path.join(REPO_ROOT, *next(iter(configs)).split("/")))
    inputs = [word for words in lines for word in words if "data/" in word]
    assert any("data/brown/" in word for word in inputs)
    assert any("data/movie_reviews.tsv" in word for word in inputs)
    with open(os.path.join(REPO_ROOT, "README.md"), encoding="utf-8") as reader:
        section = reader.read().split(CPU_CHAIN_HEADING, 1)[1].split("\n## ", 1)[0]
    assert re.search(r"Timed here, as written: \d+ minutes", section), "the chain's measured time"


def _free_port():
    import socket
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.slow
def test_readme_cpu_chain_runs_as_written(real_data, tmp_path):
    """The README's CPU chain, line by line, in a fresh folder holding what a checkout holds (the
    scripts, albert_tf/, data/): only FEWER_STEPS and the server's ports changed. The classifier
    labels the README's sentences, and the curl gets its prediction from the server."""
    from tests.conftest import script_env
    del real_data  # fetched: data/ holds what `make data` writes
    for name in ["albert_tf", "data"] + [n for n in os.listdir(REPO_ROOT) if n.endswith(".py")]:
        os.symlink(os.path.join(REPO_ROOT, name), tmp_path / name)
    env = dict(script_env(), PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
    rest, grpc = _free_port(), _free_port()
    server = None
    try:
        for words in cpu_chain():
            words = _changed(words, FEWER_STEPS)
            if words[:2] == ["python", "serve.py"] and any("--rest_api_port=" in w for w in words):
                words = _changed(words, {"rest_api_port": str(rest), "port": str(grpc)})
                server = subprocess.Popen(words, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL,
                                          stderr=subprocess.PIPE, text=True)
                continue
            if words[0] == "curl":
                words = [w.replace("localhost:8501", f"localhost:{rest}") for w in words]
                answer = _until_served(words, server, tmp_path)
                assert answer["predictions"][0]["label"] in ("0", "1"), answer
                continue
            result = subprocess.run(words, cwd=tmp_path, env=env, capture_output=True, text=True,
                                    timeout=600)
            assert result.returncode == 0, f"README's {words[:2]} failed:\n{result.stderr[-3000:]}"
            if "--text=" in " ".join(words):
                labels = [json.loads(line)["label"] for line in result.stdout.splitlines()
                          if line.startswith("{")]
                assert len(labels) == sum(w.startswith("--text=") for w in words)
                assert set(labels) <= {"0", "1"}, labels
        assert server is not None
    finally:
        if server is not None:
            server.terminate()
            server.communicate(timeout=60)


def _until_served(curl, server, cwd, timeout=300):
    """The JSON answer of the README's curl, once the server it started has loaded the model."""
    import time
    deadline = time.monotonic() + timeout
    while True:
        result = subprocess.run(curl + ["--silent", "--show-error"], cwd=cwd, capture_output=True,
                                text=True, timeout=60)
        if result.returncode == 0:
            return json.loads(result.stdout)
        assert server.poll() is None, f"serve.py stopped:\n{server.stderr.read()[-3000:]}"
        assert time.monotonic() < deadline, result.stderr
        time.sleep(1)


def test_make_serve_opens_grpc_on_grpc_port_as_the_readme_says(tmp_path):
    """`make serve` passes GRPC_PORT to serve.py's --port (two servers side by side need two),
    and the README names the variable and its default."""
    env = {key: value for key, value in os.environ.items()
           if key not in ("MAKELEVEL", "MAKEFLAGS", "MFLAGS")}
    lines = subprocess.run(["make", "-n", "serve", f"EXPORT_DIR={tmp_path}", "PORT=8601",
                            "GRPC_PORT=8602"], cwd=REPO_ROOT, capture_output=True, env=env,
                           text=True, check=True, timeout=60).stdout.splitlines()
    (command,) = [line for line in lines if "serve.py" in line]
    assert "--rest_api_port=8601" in command.split() and "--port=8602" in command.split()
    default = subprocess.run(["make", "-n", "serve", f"EXPORT_DIR={tmp_path}"], cwd=REPO_ROOT,
                             capture_output=True, env=env, text=True, check=True,
                             timeout=60).stdout
    assert "--port=8500" in default.split()
    with open(os.path.join(REPO_ROOT, "README.md"), encoding="utf-8") as reader:
        readme = " ".join(reader.read().split())
    assert "`GRPC_PORT` (8500)" in readme and "GRPC_PORT=" in readme


def test_script_help_examples_use_the_readme_folders():
    """A script's --help example (its docstring) and the README name the same input folders:
    `run_classifier.py --data_dir=glue_data`, not another spelling a user must translate."""
    from albert_tf.scripts import run_classifier
    readme = {script: argv for script, argv in fenced_commands(os.path.join(REPO_ROOT, "README.md"))}
    shown = re.sub(r"\\\n\s*", " ", run_classifier.__doc__)
    (example,) = [line.strip() for line in shown.splitlines()
                  if "python run_classifier.py --task_name" in line]  # the GLUE example
    words = shlex.split(example)[2:]
    for flag in ("data_dir", "task_name"):
        assert _flag_values(words, flag) == _flag_values(readme["run_classifier.py"], flag), flag


def test_make_test_fast_runs_the_suite_without_slow_tests():
    env = {key: value for key, value in os.environ.items()
           if key not in ("MAKELEVEL", "MAKEFLAGS", "MFLAGS")}
    lines = subprocess.run(["make", "-n", "test-fast"], cwd=REPO_ROOT, capture_output=True,
                           env=env, text=True, check=True, timeout=60).stdout.splitlines()
    assert lines[-1] == '.venv/bin/python -m pytest -q -m "not slow" tests', lines[-3:]
    with open(os.path.join(REPO_ROOT, "README.md"), encoding="utf-8") as reader:
        assert "make test-fast" in reader.read()


def test_slow_tests_are_named_as_they_start_under_q(tmp_path):
    """`pytest -q` (make test) prints `[m:ss] slow: <id>` before each slow test, none for the
    others, and still ends on pytest's summary line (CI reads it)."""
    (tmp_path / "conftest.py").write_text('pytest_plugins = ["tests.slow_progress"]\n')
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    slow: slow\n")
    (tmp_path / "test_mix.py").write_text(
        "import pytest\n\ndef test_quick():\n    print('own output')\n\n\n"
        "@pytest.mark.slow\ndef test_long():\n    print('own output')\n\n\n"
        "def test_quick_again():\n    pass\n")
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "test_mix.py"], cwd=tmp_path,
                            env=dict(os.environ, PYTHONPATH=REPO_ROOT), capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stdout
    lines = result.stdout.splitlines()
    assert [line for line in lines if "slow:" in line] == ["[0:00] slow: test_mix.py::test_long"]
    assert lines[:2] == [".", "[0:00] slow: test_mix.py::test_long"], lines
    assert re.fullmatch(r"3 passed in [\d.]+s", lines[-1]), lines[-1]
    assert "own output" not in result.stdout  # the tests' own output stays captured


def test_slow_tests_are_named_under_two_xdist_workers(tmp_path):
    """`make test` runs two pytest-xdist workers: the controller names each slow test once,
    as its setup ends in a worker, and no fast one; pytest's summary is still the last line."""
    (tmp_path / "conftest.py").write_text('pytest_plugins = ["tests.slow_progress"]\n')
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    slow: slow\n")
    for module in ("a", "b"):
        (tmp_path / f"test_{module}.py").write_text(
            "import pytest\n\ndef test_quick():\n    pass\n\n\n"
            f"@pytest.mark.slow\ndef test_long_{module}():\n    pass\n")
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "2", "--dist",
                             "loadfile"], cwd=tmp_path,
                            env=dict(os.environ, PYTHONPATH=REPO_ROOT), capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stdout
    lines = result.stdout.splitlines()
    named = sorted(line.split("] ", 1)[1] for line in lines if "slow:" in line)
    assert named == ["slow: test_a.py::test_long_a", "slow: test_b.py::test_long_b"], lines
    assert re.fullmatch(r"4 passed in [\d.]+s", lines[-1]), lines[-1]
