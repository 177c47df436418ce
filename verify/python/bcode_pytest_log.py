"""A pytest plugin bcode loads with `-p bcode_pytest_log`.

It appends one JSON line per finished test phase to the file named by
BCODE_PYTEST_LOG and flushes it at once, so that when a run is killed for
taking too long, bcode still knows which tests finished and how. (The JUnit
report, bcode's main source, is only written when the session ends.)
"""

import json
import os


def _write(record):
    path = os.environ.get("BCODE_PYTEST_LOG")
    if not path:
        return
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(record) + "\n")
        f.flush()


def _message(report):
    crash = getattr(getattr(report, "longrepr", None), "reprcrash", None)
    if crash is not None:
        return crash.message
    if isinstance(report.longrepr, tuple) and len(report.longrepr) == 3:
        return str(report.longrepr[2])  # a skip: (file, line, reason)
    return ""


def pytest_runtest_logreport(report):
    if report.when != "call" and report.passed:
        return
    _write({
        "nodeid": report.nodeid,
        "when": report.when,
        "outcome": report.outcome,
        "xfail": hasattr(report, "wasxfail"),
        "message": _message(report),
        "text": report.longreprtext if not report.passed else "",
        "duration": report.duration,
    })


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
