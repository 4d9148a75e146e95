"""A readable line as each slow test starts, under `pytest -q` (`make test`).

With `-q` pytest prints one dot per test, so a test that trains for minutes (or the killed-run
and resume tests) prints nothing for that long and looks like a hang. This plugin writes
`[m:ss] slow: <test id>` (the time since the session started) before every test marked `slow`;
fast tests stay dots, and pytest's summary stays the last line (CI reads it). With `-v` pytest
names every test itself and the plugin stays silent.
"""

import time

import pytest

_session_start = time.monotonic()


def pytest_sessionstart(session):
    global _session_start
    _session_start = time.monotonic()


def elapsed_text(seconds):
    minutes, seconds = divmod(int(seconds), 60)
    return f"{minutes}:{seconds:02d}"


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    """Before the test's setup, outside output capture (its own output stays captured)."""
    if item.get_closest_marker("slow") is None or item.config.option.verbose > 0:
        return
    reporter = item.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None:
        return
    if reporter._tw.width_of_current_line:  # the row of dots so far keeps its line
        reporter.write("\n")
    reporter.write_line(f"[{elapsed_text(time.monotonic() - _session_start)}] slow: {item.nodeid}")
