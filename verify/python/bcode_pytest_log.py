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
  altered              the code deciding outcomes was replaced by the tree's

The file is in the snapshot, where the code under test can write too, so
each line is "<hmac> <json>": HMAC-SHA256 under a key bcode writes to the
file BCODE_LOG_KEY_FILE names, which this module reads and removes when
it is imported, before any file of the snapshot runs. bcode takes only lines
whose MAC holds; any other line is the repository's doing (report altered).

The outcome itself is decided in this process, beside the code under test,
so the plugin also keeps a fingerprint of the code that decides it (every
function and class of pytest, _pytest, pluggy and this module) as it was
before the snapshot's first file ran, and compares it after collection,
after each test module and at the session's end. A replacement whose code
comes from the snapshot is an "altered" record; one from outside it (an
installed plugin patching pytest) is the environment's and is kept as the
new fingerprint.
"""

import hashlib
import hmac
import json
import os
import sys
import types

import pytest

_PATH = os.environ.pop("BCODE_PYTEST_LOG", "")


def _read_key():
    path = os.environ.pop("BCODE_LOG_KEY_FILE", "")
    if not path:
        return b""
    try:
        with open(path, "rb") as f:
            key = f.read(256)
    except OSError:
        return b""
    try:
        os.unlink(path)
    except OSError:
        pass  # still the key: bcode removes the scratch directory after the run
    return key


_KEY = _read_key()
_raw = {}
# Held here so that a later replacement of json.dumps or hmac.new by the
# code under test does not reach what this plugin writes.
_dumps = json.dumps
_mac = hmac.new
_sha256 = hashlib.sha256
_open = open


def _write(record):
    if not _PATH:
        return
    line = _dumps(record)
    mac = _mac(_KEY, line.encode("utf-8"), _sha256).hexdigest()
    with _open(_PATH, "a", encoding="utf-8") as f:
        f.write(mac + " " + line + "\n")
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


# The packages whose code decides a test's outcome and writes it down.
_DECIDING = ("_pytest", "pytest", "pluggy", "bcode_pytest_log")


def _fingerprint():
    """Every function and class of the deciding packages, and every function
    of those classes, as (owner, name, object, code): what each name is
    bound to now."""
    out = []
    for name, mod in list(sys.modules.items()):
        if mod is None or name.partition(".")[0] not in _DECIDING:
            continue
        d = getattr(mod, "__dict__", None)
        if not isinstance(d, dict):
            continue
        out.append((sys.modules, name, mod, None))
        for k, v in list(d.items()):
            if isinstance(v, types.FunctionType):
                out.append((d, k, v, v.__code__))
            elif isinstance(v, type) and getattr(v, "__module__", None) == name:
                out.append((d, k, v, None))
                for ck, cv in list(vars(v).items()):
                    f = getattr(cv, "__func__", cv)
                    if isinstance(f, types.FunctionType):
                        out.append((v, ck, cv, f.__code__))
    return out


def _guard(write, realpath=os.path.realpath, exists=os.path.exists, sep=os.sep, modules=sys.modules):
    """The fingerprint as it is now, and the check that compares it: a
    closure over every name it uses, bound here, so that replacing a
    module attribute later (this module's included) does not change what
    the check does."""
    entries = _fingerprint()
    state = {"root": "", "reported": set()}

    def code_of(obj):
        f = getattr(obj, "__func__", obj)
        return getattr(f, "__code__", None)

    def origin(obj):
        if obj is None:
            return None
        code = code_of(obj)
        if code is not None:
            return code.co_filename
        f = getattr(obj, "__file__", None)
        if f is None:
            f = getattr(modules.get(getattr(obj, "__module__", "") or ""), "__file__", None)
        return f

    def inside(path):
        """Whether path is the snapshot's, or no real file (made at run
        time)."""
        root = state["root"]
        if path is None:
            return True
        try:
            p = realpath(path)
        except (TypeError, ValueError):
            return True
        if not exists(p):
            return True
        return bool(root) and (p == root or p.startswith(root + sep))

    def report(label, where, when):
        if label in state["reported"]:
            return
        state["reported"].add(label)
        root = state["root"]
        if where is None:
            where = "no file"
        elif root and where.startswith(root + sep):
            where = where[len(root) + 1 :]
        write({
            "nodeid": "",
            "when": "altered",
            "outcome": "altered",
            "text": "%s was replaced by code from %s (seen %s)" % (label, where, when),
        })

    def check_instances(when):
        """The plugin manager and its hook callers are objects, not module
        code: a function of the snapshot's among their own attributes (how
        pluggy calls the hooks) is a replacement; the hook implementations
        conftest files register are not attributes and stay allowed."""
        pm = state.get("pm")
        if pm is None:
            return
        objs = [("PluginManager", pm)]
        hooks = getattr(getattr(pm, "hook", None), "__dict__", {})
        objs += [("hook " + name, caller) for name, caller in list(hooks.items())]
        for label, obj in objs:
            for key, value in list(getattr(obj, "__dict__", {}).items()):
                if not callable(value) or isinstance(value, type):
                    continue
                where = origin(value)
                if inside(where):
                    report("%s.%s" % (label, key), where, when)

    def check(when):
        check_instances(when)
        for i, (owner, key, obj, code) in enumerate(entries):
            now = owner.get(key) if isinstance(owner, dict) else owner.__dict__.get(key)
            if now is obj and (code is None or code_of(now) is code):
                continue
            where = origin(now)
            # A name set to None (pytest clears some between tests) decides
            # nothing; neither does code from outside the snapshot.
            if now is None or not inside(where):
                entries[i] = (owner, key, now, code_of(now))  # the environment's
                continue
            label = key if owner is modules else "%s.%s" % (getattr(owner, "__name__", "?"), key)
            report(label, where, when)

    def start(config):
        state["root"] = realpath(str(config.rootpath))
        state["pm"] = config.pluginmanager

    return check, start


_check, _start = _guard(_write)


def _file_of(item):
    return str(getattr(item, "path", None) or item.fspath)


# Each hook below holds the check in a default argument (pluggy passes
# only the arguments without one), not by a module-level name the code
# under test could rebind.
def pytest_sessionstart(session, _check=_check, _start=_start):
    _start(session.config)
    _check("at the session's start")


def pytest_collection_finish(session, _check=_check):
    _check("after collection")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem, _check=_check, _file_of=_file_of):
    yield
    if nextitem is None or _file_of(nextitem) != _file_of(item):
        _check("after " + item.nodeid)


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session, _check=_check):
    _check("at the session's end")
