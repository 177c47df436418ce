"""A pytest plugin bcode loads with `-p bcode_pytest_log`.

It appends one JSON line per event to the file named by BCODE_PYTEST_LOG and
flushes it at once, so that a run killed for taking too long still tells
which tests finished and how. It is bcode's own record of every test's
outcome: the JUnit report and the terminal summary come from reports that a
plugin or conftest.py of the repository can rewrite, so next to each report
it keeps what the test call itself raised (read in pytest_runtest_makereport
from the call's own exception info), and bcode compares the two.

Records ("when"):
  setup/call/teardown  a test phase: its final report, plus "raw" for call
  collect              a collector that failed (a module that cannot import)
  collected            a test module that collected (its tests may be 0)
  deselected           a test a hook or -k/-m removed from the run
"""

import json
import os

import pytest

_PATH = os.environ.pop("BCODE_PYTEST_LOG", "")
_raw = {}


def _write(record):
    if not _PATH:
        return
    with open(_PATH, "a", encoding="utf-8") as f:
        f.write(json.dumps(record) + "\n")
        f.flush()


def _message(report):
    crash = getattr(getattr(report, "longrepr", None), "reprcrash", None)
    if crash is not None:
        return crash.message
    if isinstance(report.longrepr, tuple) and len(report.longrepr) == 3:
        return str(report.longrepr[2])  # a skip: (file, line, reason)
    return ""


def _raw_outcome(call):
    info = call.excinfo
    if info is None:
        return "passed", ""
    try:
        if info.errisinstance(pytest.xfail.Exception):
            return "xfailed", str(info.value)[:500]
        if info.errisinstance(pytest.skip.Exception):
            return "skipped", str(info.value)[:500]
    except Exception:  # noqa: BLE001 - a broken exception must not break the record
        pass
    try:
        text = "%s: %s" % (info.typename, info.value)
    except Exception:  # noqa: BLE001
        text = info.typename
    return "failed", text[:2000]


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    raw, text = _raw_outcome(call)
    if call.when == "call":
        xfail = item.get_closest_marker("xfail") is not None
        _raw[item.nodeid] = (raw, text, xfail)
    yield


def pytest_runtest_logreport(report):
    rec = {
        "nodeid": report.nodeid,
        "when": report.when,
        "outcome": report.outcome,
        "xfail": hasattr(report, "wasxfail"),
        "message": _message(report),
        "text": report.longreprtext if not report.passed else "",
        "duration": report.duration,
    }
    if report.when == "call":
        raw = _raw.pop(report.nodeid, None)
        if raw is not None:
            rec["raw"], rec["raw_text"], rec["xfail_marker"] = raw
    elif report.passed:
        return
    _write(rec)


def pytest_collectreport(report):
    if report.failed:
        _write({
            "nodeid": report.nodeid,
            "when": "collect",
            "outcome": "failed",
            "xfail": False,
            "message": "collection failure",
            "text": report.longreprtext,
            "duration": 0,
        })
    elif report.nodeid.endswith(".py") and "::" not in report.nodeid:
        _write({"nodeid": report.nodeid, "when": "collected", "outcome": report.outcome})


def pytest_deselected(items):
    for item in items:
        _write({"nodeid": item.nodeid, "when": "deselected", "outcome": "deselected"})
