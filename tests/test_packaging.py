"""`pip install .`: the package, its config files and one command per script, pinned as
requirements.txt."""

import glob
import os
import re
import shutil
import subprocess
import sys
import tomllib

import pytest

from tests.conftest import REPO_ROOT, run_python


def _pyproject():
    with open(os.path.join(REPO_ROOT, "pyproject.toml"), "rb") as reader:
        return tomllib.load(reader)


def test_dependencies_are_the_pinned_requirements():
    with open(os.path.join(REPO_ROOT, "requirements.txt"), encoding="utf-8") as reader:
        pinned = sorted(line.strip() for line in reader if re.match(r"^[A-Za-z]", line))
    assert sorted(_pyproject()["project"]["dependencies"]) == pinned
    assert all("==" in requirement for requirement in pinned)


def test_every_script_has_a_command():
    scripts = _pyproject()["project"]["scripts"]
    modules = sorted(os.path.basename(path)[:-3] for path in
                     glob.glob(os.path.join(REPO_ROOT, "albert_tf", "scripts", "[a-z]*.py")))
    assert sorted(target.split(":")[0].rsplit(".", 1)[1] for target in scripts.values()) == modules
    shims = sorted(os.path.basename(path)[:-3] for path in glob.glob(os.path.join(REPO_ROOT, "*.py")))
    assert shims == modules  # python run_classifier.py ... from the checkout, too


@pytest.mark.slow
def test_installed_commands_run_outside_the_checkout(tmp_path):
    """A wheel built from the checkout, installed under a prefix: its commands answer --help
    from anywhere, importing the installed package (not the checkout) with its config files."""
    source = tmp_path / "source"  # setuptools builds in the source tree: not in the checkout
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(os.path.join(REPO_ROOT, name), source / name)
    shutil.copytree(os.path.join(REPO_ROOT, "albert_tf"), source / "albert_tf",
                    ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
                    "--no-build-isolation", "-w", str(tmp_path / "dist"), str(source)],
                   check=True, capture_output=True, timeout=600)
    (wheel,) = glob.glob(str(tmp_path / "dist" / "albert_tf-*.whl"))
    prefix = tmp_path / "prefix"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                    "--prefix", str(prefix), wheel], check=True, capture_output=True, timeout=600)
    (site,) = glob.glob(str(prefix / "lib" / "python3*" / "site-packages"))
    env = dict(os.environ, PYTHONPATH=site, TF_CPP_MIN_LOG_LEVEL="3")
    where = subprocess.run(
        [sys.executable, "-c", "import albert_tf, os; from albert_tf.config import AlbertConfig; "
         "print(albert_tf.__file__); AlbertConfig.from_json_file(os.path.join(os.path.dirname("
         "albert_tf.__file__), 'configs', 'albert_base_v2.json'))"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert where.returncode == 0, where.stderr[-2000:]
    assert where.stdout.strip().startswith(site)
    processes = {name: subprocess.Popen([str(prefix / "bin" / name), "--helpfull"], cwd=tmp_path,
                                        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                        text=True)
                 for name in _pyproject()["project"]["scripts"]}
    for name, target in _pyproject()["project"]["scripts"].items():
        output, _ = processes[name].communicate(timeout=300)
        assert processes[name].returncode == 0, (name, output[-2000:])  # help given is success
        module = target.split(":")[0]
        assert f"\n{module}:\n" in output, (name, output[-1000:])  # the script's own flags
        assert "Traceback" not in output


def _setup_commands():
    """The commands `make setup` runs on a fresh checkout (make -n -B: printed, not run)."""
    env = {key: value for key, value in os.environ.items()
           if key not in ("MAKELEVEL", "MAKEFLAGS", "MFLAGS")}
    return subprocess.run(["make", "-n", "-B", "setup"], cwd=REPO_ROOT, capture_output=True,
                          env=env, text=True, check=True, timeout=60).stdout.splitlines()


@pytest.mark.slow
def test_make_setup_installs_the_package_importable_from_any_directory(tmp_path):
    """`make setup` installs albert_tf editable after the requirements, so `.venv/bin/python -c
    'import albert_tf'` works outside the checkout. The recipe's own install command runs here
    into a scratch prefix (not the shared environment) and the package imports from elsewhere,
    resolving to this checkout's files."""
    lines = _setup_commands()
    requirements = next(i for i, line in enumerate(lines) if "-r requirements-dev.txt" in line)
    (editable,) = [i for i, line in enumerate(lines) if re.search(r"pip install .*-e \.$", line)]
    assert editable > requirements, lines
    assert "--no-deps" in lines[editable]  # the pinned requirements stay as installed
    assert _pyproject()["tool"]["setuptools"]["packages"]["find"]["include"] == ["albert_tf*"]

    words = lines[editable].split()
    assert words[:2] == [".venv/bin/python", "-m"], words
    prefix = tmp_path / "prefix"
    subprocess.run([sys.executable, *words[1:], "--prefix", str(prefix)], cwd=REPO_ROOT,
                   check=True, capture_output=True, timeout=600)
    (site,) = glob.glob(str(prefix / "lib" / "python3*" / "site-packages"))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    result = subprocess.run(
        [sys.executable, "-c", "import site, sys; sys.path = [p for p in sys.path if p]; "
         f"site.addsitedir({site!r}); import albert_tf.config as c; print(c.__file__)"],
        cwd=elsewhere, env=dict(env, TF_CPP_MIN_LOG_LEVEL="3"), capture_output=True, text=True,
        timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == os.path.join(REPO_ROOT, "albert_tf", "config.py")


def test_test_references_are_on_the_tests_path_only():
    """scikit-learn (requirements-test-references.txt) is importable in this pytest process, and
    the scripts the tests start import Keras without it, as from a `requirements.txt` install."""
    import sklearn.metrics
    assert os.path.join(sys.prefix, "test-references") in sklearn.metrics.__file__
    result = run_python(["-c", "import sys, keras; print(sorted(m for m in sys.modules "
                                "if m.split('.')[0] in ('sklearn', 'joblib')))"])
    assert result.stdout.strip() == "[]", result.stdout
