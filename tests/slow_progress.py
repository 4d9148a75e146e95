"""A readable line as each slow test starts, under `pytest -q` (`make test`).

With `-q` pytest prints one dot per test, so a test that trains for minutes (or the killed-run
and resume tests) prints nothing for that long and looks like a hang. This plugin writes
`[m:ss] slow: <test id>` (the time since the session started) before every test marked `slow`;
fast tests stay dots, and pytest's summary stays the last line (CI reads it). With `-v` pytest
names every test itself and the plugin stays silent.

Under pytest-xdist (`make test` runs two workers) the tests run in the workers, which have no
terminal, and the controller learns a test's markers only from its reports: there the line
is written when the test's setup report arrives, i.e. as its call begins, after its fixtures.
"""

import time

import pytest

_session_start = time.monotonic()
_session_config = None


def pytest_sessionstart(session):
    global _session_start, _session_config
    _session_start = time.monotonic()
    _session_config = session.config


def elapsed_text(seconds):
    minutes, seconds = divmod(int(seconds), 60)
    return f"{minutes}:{seconds:02d}"


def _announce(config, nodeid):
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None or config.option.verbose > 0:
        return
    if reporter._tw.width_of_current_line:  # the row of dots so far keeps its line
        reporter.write("\n")
    reporter.write_line(f"[{elapsed_text(time.monotonic() - _session_start)}] slow: {nodeid}")


def _distributed(config):
    """True in pytest-xdist's controller, whose workers run the tests."""
    return config.pluginmanager.has_plugin("dsession")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    """Before the test's setup, outside output capture (its own output stays captured)."""
    if item.get_closest_marker("slow") is not None:
        _announce(item.config, item.nodeid)


def pytest_runtest_logreport(report):
    """pytest-xdist's controller: a slow test's setup has ended in a worker."""
    if report.when == "setup" and report.passed and "slow" in report.keywords:
        config = _session_config
        if config is not None and _distributed(config):
            _announce(config, report.nodeid)
