"""Every script command shown in README.md names a script that exists and only flags it defines.

The README's examples are what users copy; a renamed or mistyped flag there is a bug.
"""

import os
import re
import subprocess
import sys

import pytest

from tests.conftest import REPO_ROOT

_COMMAND = re.compile(r"python3?\s+(\S+\.py)\b(.*)")
_FLAG = re.compile(r"(?<![\w-])--([A-Za-z_][\w]*)")


def readme_commands():
    """{script: set of flag names} over the README's fenced code blocks, continuation lines joined."""
    with open(os.path.join(REPO_ROOT, "README.md"), encoding="utf-8") as reader:
        text = reader.read()
    commands = {}
    for block in re.findall(r"^```[^\n]*\n(.*?)^```", text, flags=re.S | re.M):
        joined = re.sub(r"\\\n\s*", " ", block)
        for line in joined.splitlines():
            match = _COMMAND.search(line)
            if match and not match.group(1).startswith(("bench/", "-m")):
                commands.setdefault(match.group(1), set()).update(_FLAG.findall(match.group(2)))
    return commands


def defined_flags(script_output):
    return set(re.findall(r"^\s+--(?:\[no\])?([\w]+)[:\s]", script_output, flags=re.M))


def test_readme_shows_the_main_scripts():
    commands = readme_commands()
    for script in ("build_vocab.py", "create_pretraining_data.py", "run_pretraining.py",
                   "run_classifier.py", "serve.py"):
        assert script in commands, f"README.md shows no command for {script}"


@pytest.mark.slow
def test_readme_commands_use_defined_flags():
    commands = readme_commands()
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
    assert not problems, "README.md uses flags the scripts do not define: " + ", ".join(problems)
