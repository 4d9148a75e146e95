"""Every script command shown in README.md and docs/ names a script that exists and only flags it
defines; every relative link there points at a file of the repository.

The README's and the docs' examples are what users copy; a renamed or mistyped flag there is a bug.
"""

import glob
import os
import re
import subprocess
import sys

import pytest

from tests.conftest import REPO_ROOT

_COMMAND = re.compile(r"python3?\s+(\S+\.py)\b(.*)")
_FLAG = re.compile(r"(?<![\w-])--([A-Za-z_][\w]*)")


def documentation_files():
    return [os.path.join(REPO_ROOT, "README.md")] + sorted(
        glob.glob(os.path.join(REPO_ROOT, "docs", "*.md")))


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
                commands.setdefault(match.group(1), set()).update(_FLAG.findall(match.group(2)))


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
        assert len(reader.read().splitlines()) <= 250, "README.md: keep it under 250 lines"
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
