"""The CLI error convention and the output-directory lock."""

import os
import re
import subprocess
import sys
import textwrap

import pytest

from albert_tf import cli, errors
from albert_tf.files import output_lock

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _script(tmp_path, body):
    path = tmp_path / "tool.py"
    path.write_text(textwrap.dedent(body))
    return subprocess.run([sys.executable, str(path)], capture_output=True, text=True,
                          timeout=120, cwd=REPO_ROOT,
                          env=dict(os.environ, PYTHONPATH=REPO_ROOT))


def test_user_input_error_is_one_line_and_exit_2(tmp_path):
    result = _script(tmp_path, """
        from albert_tf import cli, errors
        def main(argv):
            raise errors.UserInputError("--learning_rate=-1: expected a number > 0")
        cli.run(main)
        """)
    assert result.returncode == cli.EXIT_USER_ERROR
    assert result.stderr.strip().splitlines()[-1] == \
        "tool.py: error: --learning_rate=-1: expected a number > 0"
    assert "Traceback" not in result.stderr


def test_a_bug_keeps_its_traceback(tmp_path):
    result = _script(tmp_path, """
        from albert_tf import cli
        def main(argv):
            raise KeyError("bug")
        cli.run(main)
        """)
    assert result.returncode == 1 and "Traceback" in result.stderr


def test_help_exits_0_and_other_exits_keep_their_status(tmp_path):
    tool = tmp_path / "tool.py"
    tool.write_text("from absl import flags\nfrom albert_tf import cli\n"
                    "flags.DEFINE_integer('code', 0, 'exit status of main')\n"
                    "cli.run(lambda argv: flags.FLAGS.code)\n")
    for argv, status in ((["--help"], 0), (["--helpfull"], 0), (["-?"], 0), (["--code=1"], 1),
                         (["--code=3"], 3), (["--no_such_flag"], 1)):
        result = subprocess.run([sys.executable, str(tool)] + argv, capture_output=True,
                                text=True, timeout=120, cwd=REPO_ROOT,
                                env=dict(os.environ, PYTHONPATH=REPO_ROOT))
        assert result.returncode == status, (argv, result.stderr[-1000:])
        if argv[0].startswith(("--help", "-?")):
            assert "--code" in result.stdout
    assert not cli.asks_for_help(["x", "--", "--help"])
    assert not cli.asks_for_help(["x", "--help=false", "--helpless"])
    assert cli.asks_for_help(["x", "--code=2", "-helpfull"])


def test_multiline_message_becomes_one_line():
    assert cli.error_line(errors.UserInputError("a\nb"), "x.py") == "x.py: error: a b"


def test_second_writer_refused_and_released_on_exit(tmp_path):
    directory = str(tmp_path / "out")
    script = ("from albert_tf.files import output_lock\n"
              f"with output_lock.hold({directory!r}, 'train'): pass")
    with output_lock.hold(directory, "train"):
        second = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                                cwd=REPO_ROOT, timeout=120,
                                env=dict(os.environ, PYTHONPATH=REPO_ROOT))
        assert second.returncode != 0
        assert re.search(r"out: another train run .*pid \d+", second.stderr), second.stderr
        with output_lock.hold(directory, "eval"):  # an evaluator beside a trainer is fine
            pass
    released = subprocess.run([sys.executable, "-c", script], cwd=REPO_ROOT, timeout=120,
                              env=dict(os.environ, PYTHONPATH=REPO_ROOT))
    assert released.returncode == 0


def test_lock_of_a_killed_process_is_free(tmp_path):
    directory = str(tmp_path / "out")
    child = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(f"""
            import sys, time
            from albert_tf.files import output_lock
            with output_lock.hold({directory!r}, "train"):
                print("held", flush=True)
                time.sleep(600)
            """)],
        stdout=subprocess.PIPE, text=True, cwd=REPO_ROOT,
        env=dict(os.environ, PYTHONPATH=REPO_ROOT))
    try:
        assert child.stdout.readline().strip() == "held"
        with pytest.raises(errors.UserInputError, match="another train run"):
            with output_lock.hold(directory, "train"):
                pass
    finally:
        child.kill()
        child.wait(timeout=30)
    with output_lock.hold(directory, "train"):
        pass


def test_unwritable_directory_named(tmp_path):
    if os.geteuid() == 0:
        target = "/proc/albert_tf_cannot_exist"
    else:
        locked = tmp_path / "ro"
        locked.mkdir(mode=0o500)
        target = str(locked / "out")
    with pytest.raises(errors.UserInputError, match="albert_tf_cannot_exist|ro/out"):
        with output_lock.hold(target, "train"):
            pass


def test_lock_is_reentrant_within_a_process(tmp_path):
    directory = str(tmp_path / "out")
    with output_lock.hold(directory, "eval"):
        with output_lock.hold(directory, "eval"):
            pass
        child = subprocess.run(
            [sys.executable, "-c", "from albert_tf.files import output_lock\n"
             f"with output_lock.hold({directory!r}, 'eval'): pass"],
            capture_output=True, text=True, cwd=REPO_ROOT, timeout=120,
            env=dict(os.environ, PYTHONPATH=REPO_ROOT))
        assert child.returncode != 0 and "another eval run" in child.stderr


@pytest.mark.slow
def test_help_lists_the_scripts_flags_when_installed(tmp_path):
    """pip's console wrapper is `__main__` (no docstring) and names itself in sys.argv[0], while
    the flags are filed under albert_tf.scripts.*: `--help` must still show the script's
    docstring and its flags, its own and the shared training ones."""
    wrapper = ("import sys\nsys.argv[0] = sys.argv[0].replace('wrapper.py', 'run_classifier')\n"
               "from albert_tf.scripts.run_classifier import entry\nsys.exit(entry())\n")
    (tmp_path / "wrapper.py").write_text(wrapper)
    result = subprocess.run([sys.executable, str(tmp_path / "wrapper.py"), "--help"],
                            capture_output=True, text=True, timeout=300, cwd=tmp_path,
                            env=dict(os.environ, PYTHONPATH=REPO_ROOT, TF_CPP_MIN_LOG_LEVEL="2"))
    assert result.returncode == 0, result.stderr[-2000:]  # help given is success
    assert result.stdout.startswith("Fine-tune ALBERT on a GLUE task"), result.stdout[:500]
    for flag in ("--task_name", "--data_dir", "--learning_rate", "--train_batch_size"):
        assert f"\n  {flag}:" in result.stdout, (flag, result.stdout[-2000:])


def test_missing_file_under_data_says_to_run_make_data():
    line = cli.error_line(errors.MissingFileError("--train_file: file data/brown_tagging/train.txt "
                                                  "does not exist"), "run_tagging.py")
    assert line.endswith("(`make data` fetches the real data sets into data/)")
    tagging = cli.error_line(errors.UserInputError(
        "data/brown_tagging/pos_train.txt: tagging file not found (expected `token tag` lines)"), "x")
    assert tagging.endswith("(`make data` fetches the real data sets into data/)")
    other = cli.error_line(errors.MissingFileError("--input: file corpus/a.txt does not exist"), "x")
    assert "make data" not in other
    bad = cli.error_line(errors.UserInputError("data/movie_reviews.tsv:3: expected 2 columns"), "x")
    assert "make data" not in bad


@pytest.mark.parametrize("argv, expected", [([], "INFO shown, DEBUG hidden"),
                                            (["-v", "1"], "INFO shown, DEBUG shown")])
def test_scripts_log_info_by_default_and_details_at_v1(tmp_path, argv, expected):
    (tmp_path / "tool.py").write_text(textwrap.dedent("""
        from absl import logging
        from albert_tf import cli
        def run(flag_values):
            print("INFO", "shown" if logging.level_info() else "hidden", end=", ")
            print("DEBUG", "shown" if logging.level_debug() else "hidden")
        cli.run_script(lambda flag_values: None, run)
        """))
    result = subprocess.run([sys.executable, str(tmp_path / "tool.py"), *argv], capture_output=True,
                            text=True, timeout=120, cwd=REPO_ROOT, env=dict(os.environ, PYTHONPATH=REPO_ROOT))
    assert result.stdout.strip() == expected, result.stderr[-2000:]


def test_a_script_freezes_its_objects_before_python_s_final_collections(tmp_path):
    """Handlers run last-registered first: one registered before `cli.run` runs after cli's own
    and sees the objects frozen, so the interpreter's final collections skip them."""
    result = _script(tmp_path, """
        import atexit, gc
        atexit.register(lambda: print("frozen at exit:", gc.get_freeze_count() > 0, flush=True))
        from albert_tf import cli
        print("frozen while running:", gc.get_freeze_count() > 0, flush=True)
        cli.run(lambda argv: 0)
        """)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.splitlines() == ["frozen while running: False", "frozen at exit: True"]
