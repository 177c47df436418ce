#!/usr/bin/env python3
"""Build and hand-run cases of the real corpus (see README.md).

  mkcase.py new NAME --repo GITDIR --commit SHA --source URL --keep PATH... [--gomod MODULE] [--js RUNNER]
      Writes NAME.txtar: base/ = the commit's parent trimmed to the kept paths
      (a path is a file or a directory prefix), head/ = the kept files the
      commit changes. The label starts as "TODO"; then runs `check`.
      --js vitest|jest adds the package.json and package-lock.json of
      verify/javascript/testdata/RUNNER (the runner alone, pinned) to base/.
  mkcase.py check FILE.txtar... [--write]
      Builds base, base+head's tests, and head as plain directories and runs
      every test in each with plain `go test -json ./...`,
      `/usr/bin/python3 -m pytest --junitxml`, `cargo test --offline`
      (Rust: each side its own CARGO_TARGET_DIR), or the JavaScript project's
      runner (vitest run / jest with their JSON reporters, node --test with
      its junit one; node_modules from `npm ci --ignore-scripts` of the
      case's package-lock.json, cached by its hash), then prints each test ID whose
      outcome differs between them. --write replaces the case's evidence:
      lines with the result.

Nothing here is the gate: it is the hand run the labels come from.
"""
import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON = "/usr/bin/python3"


def git(gitdir, *args, binary=False):
    out = subprocess.run(["git", "--git-dir", gitdir, *args], check=True, capture_output=True).stdout
    return out if binary else out.decode()


def kept(path, keep):
    return any(path == k or path.startswith(k.rstrip("/") + "/") for k in keep)


def tree(gitdir, rev, keep):
    files = {}
    for line in git(gitdir, "ls-tree", "-r", rev).splitlines():
        meta, path = line.split("\t", 1)
        mode, typ, sha = meta.split()
        if typ != "blob" or mode == "120000" or not kept(path, keep):
            continue
        data = git(gitdir, "cat-file", "blob", sha, binary=True)
        try:
            if b"\0" in data:
                raise UnicodeError
            files[path] = data.decode()
        except UnicodeError:
            print(f"  skipping binary or non-UTF-8 {path}", file=sys.stderr)
    return files


JS_TEST = re.compile(r"(\.|^)(test|spec)\.[cm]?[jt]sx?$")


def is_test_file(path):
    base = os.path.basename(path)
    parts = path.split("/")
    return (bool(JS_TEST.search(base)) or "__tests__" in parts or "__snapshots__" in parts or base.endswith("_test.go") or (base.startswith("test_") and base.endswith(".py"))
            or base.endswith("_test.py") or base == "conftest.py"
            or "testdata" in parts or (parts[0] in ("tests", "test", "testing") and len(parts) > 1))


# ---- Rust unit tests: the gate's splice (verify/rust/splice.go) ---------

RUST_TOKEN = re.compile(r"""
    (?P<skip> \s+ | //[^\n]* | /\*(?:.|\n)*?\*/ )
  | (?P<str> b?r(?P<h>\#*)"(?:.|\n)*?"(?P=h) | b?"(?:\\.|[^"\\])*" )
  | (?P<chr> b?'(?:\\.|[^'\\])' )
  | (?P<life> '[A-Za-z_]\w* )
  | (?P<ident> [A-Za-z_]\w* )
  | (?P<other> . )
""", re.X | re.S)


def rust_tokens(src):
    """(text, offset, is_ident) of src's tokens, comments and strings skipped
    as single tokens so their braces do not count."""
    out = []
    for m in RUST_TOKEN.finditer(src):
        if m.lastgroup == "skip":
            continue
        out.append((m.group(0), m.start(), m.lastgroup == "ident"))
    return out


def rust_test_modules(src):
    """The top-level #[cfg(test)] modules of src as (name, start, end), from
    the first attribute to the closing brace, as verify/rust/splice.go
    reads them; None when the braces do not balance."""
    toks, out, depth, attr, test_only, i = rust_tokens(src), [], 0, -1, False, 0
    def close(i, open_, shut):
        d = 0
        for j in range(i, len(toks)):
            if toks[j][0] == open_:
                d += 1
            elif toks[j][0] == shut:
                d -= 1
                if d == 0:
                    return j + 1
        return None
    while i < len(toks):
        t = toks[i][0]
        if depth == 0 and t == "#" and i + 1 < len(toks) and toks[i + 1][0] == "[":
            end = close(i + 1, "[", "]")
            if end is None:
                return None
            attr = toks[i][1] if attr < 0 else attr
            test_only = test_only or [x[0] for x in toks[i + 2:end - 1]] == ["cfg", "(", "test", ")"]
            i = end
            continue
        if depth == 0 and t == "mod" and i + 2 < len(toks) and toks[i + 1][2] and toks[i + 2][0] == "{":
            end = close(i + 2, "{", "}")
            if end is None:
                return None
            if test_only:
                last = toks[end - 1]
                out.append((toks[i + 1][0], attr, last[1] + 1))
            attr, test_only, i = -1, False, end
            continue
        if t == "{":
            depth += 1
            attr, test_only = -1, False
        elif t == "}":
            depth -= 1
            if depth < 0:
                return None
            attr, test_only = -1, False
        elif depth == 0 and t in ("pub", "(", ")", "crate", "super", "in"):
            pass
        elif depth == 0:
            attr, test_only = -1, False
        i += 1
    return out if depth == 0 else None


def rust_splice(code, tests):
    """code's file with its #[cfg(test)] modules replaced by tests's, as the
    gate's SpliceTests makes it; None when either cannot be read."""
    have, want = rust_test_modules(code), rust_test_modules(tests)
    if have is None or want is None:
        return None
    by_name = {m[0]: m for m in want}
    out, at, placed = "", 0, set()
    for name, start, end in have:
        out += code[at:start]
        if name in by_name and name not in placed:
            out += tests[by_name[name][1]:by_name[name][2]]
            placed.add(name)
        at = end
    out += code[at:]
    for name, start, end in want:
        if name not in placed:
            if out and not out.endswith("\n"):
                out += "\n"
            out += "\n" + tests[start:end] + "\n"
    return out


def mixed(code_side, tests_side, rust):
    """A mixed layout's files: code_side's code with tests_side's test
    files; a Rust source file both sides have gets code_side's code with
    tests_side's #[cfg(test)] modules (the gate's splice)."""
    out = {k: v for k, v in code_side.items() if not is_test_file(k)}
    out.update({k: v for k, v in tests_side.items() if is_test_file(k)})
    if rust:
        for k, v in code_side.items():
            if k.endswith(".rs") and not is_test_file(k) and k in tests_side and tests_side[k] != v:
                spliced = rust_splice(v, tests_side[k])
                if spliced is None:
                    print(f"  {k}: test modules unreadable; not spliced", file=sys.stderr)
                else:
                    out[k] = spliced
    return out


# ---- txtar -------------------------------------------------------------

def parse_txtar(path):
    text = open(path).read()
    parts = re.split(r"^-- (.+?) --\n", text, flags=re.M)
    header, files = parts[0], {}
    for i in range(1, len(parts), 2):
        files[parts[i]] = parts[i + 1]
    return header, files


def write_txtar(path, header, files):
    with open(path, "w") as f:
        f.write(header if header.endswith("\n") else header + "\n")
        for name, data in files.items():
            if re.search(r"^-- .* --$", data, flags=re.M):
                raise SystemExit(f"{name}: a line looks like a txtar file marker")
            if data and not data.endswith("\n"):
                data += "\n"
            f.write(f"-- {name} --\n{data}")


def header_get(header, key):
    return [l.split(":", 1)[1].strip() for l in header.splitlines() if l.startswith(key + ":")]


def resolve(path):
    """Returns (header, base files, head overlay) with a variant's from: applied."""
    header, files = parse_txtar(path)
    base = {k[5:]: v for k, v in files.items() if k.startswith("base/")}
    head = {k[5:]: v for k, v in files.items() if k.startswith("head/")}
    frm = header_get(header, "from")
    if frm:
        _, pbase, phead = resolve(os.path.join(os.path.dirname(path), frm[0] + ".txtar"))
        base = dict(pbase, **base)
        head = dict(phead, **head)
    for k, v in list(head.items()):
        if v.strip() == "<base>":
            head[k] = base.get(k, "<deleted>\n")
    return header, base, head


def materialize(dir_, base, overlay, only_tests=False):
    for k, v in base.items():
        p = os.path.join(dir_, k)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        open(p, "w").write(v)
    for k, v in overlay.items():
        if only_tests and not is_test_file(k):
            continue
        p = os.path.join(dir_, k)
        if v.strip() == "<deleted>":
            if os.path.exists(p):
                os.remove(p)
            continue
        os.makedirs(os.path.dirname(p), exist_ok=True)
        open(p, "w").write(v)


# ---- plain runs --------------------------------------------------------

def run_go(dir_):
    env = dict(os.environ, GOTOOLCHAIN="local", GOFLAGS="-mod=mod", GOPROXY="off")
    p = subprocess.run(["go", "test", "-count=1", "-json", "./..."], cwd=dir_, env=env, capture_output=True, text=True)
    res, out = {}, {}
    for line in p.stdout.splitlines():
        try:
            ev = json.loads(line)
        except ValueError:
            continue
        t = ev.get("Test")
        if not t:
            if ev.get("Action") == "fail" and ev.get("Package"):
                res.setdefault("(package " + ev["Package"] + ")", "fail")
            continue
        if ev.get("Action") == "output":
            o = ev.get("Output", "")
            if re.search(r"\S+\.go:\d+:", o) and t not in out:
                out[t] = o.strip()
        if ev.get("Action") in ("pass", "fail", "skip"):
            res[t] = ev["Action"]
    if p.stderr.strip() and not res:
        res["(build)"] = "fail"
        out["(build)"] = p.stderr.strip().splitlines()[0]
    elif p.stderr.strip():
        for l in p.stderr.splitlines():
            if ".go:" in l:
                out.setdefault("(build)", l.strip())
                res.setdefault("(build)", "fail")
                break
    # a package that failed while every test passed (TestMain, build error)
    return res, out


def run_py(dir_):
    xml = os.path.join(dir_, ".junit.xml")
    # A src/ layout is imported from the snapshot's own src/, as an
    # install of that snapshot would be.
    path = os.path.join(dir_, "src") + os.pathsep + dir_ if os.path.isdir(os.path.join(dir_, "src")) else dir_
    env = dict(os.environ, PYTHONPATH=path, PYTHONDONTWRITEBYTECODE="1")
    subprocess.run([PYTHON, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--junitxml", xml],
                   cwd=dir_, env=env, capture_output=True, text=True)
    res, out = {}, {}
    if not os.path.exists(xml):
        return {"(pytest)": "fail"}, {"(pytest)": "no junit report"}
    for tc in ET.parse(xml).getroot().iter("testcase"):
        tid = tc.get("classname", "") + "::" + tc.get("name", "")
        st = "pass"
        for child in tc:
            if child.tag in ("failure", "error"):
                st = "fail" if child.tag == "failure" else "error"
                msg = (child.get("message") or "").strip().splitlines()
                out[tid] = (msg[0] if msg else "")[:160]
            elif child.tag == "skipped":
                st = "xfail" if child.get("type") == "pytest.xfail" else "skip"
        res[tid] = st
    os.remove(xml)
    return res, out


def run_rust(dir_):
    """cargo test --offline in dir_ (its own CARGO_TARGET_DIR): each test as
    verify/rust names it, target root file and libtest name."""
    env = dict(os.environ, CARGO_TARGET_DIR=os.path.join(dir_, ".target"), CARGO_TERM_COLOR="never",
               CARGO_NET_OFFLINE="true", CARGO_INCREMENTAL="0")
    p = subprocess.run(["cargo", "test", "--offline", "--no-fail-fast"], cwd=dir_, env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    res, out, unit, fails = {}, {}, "(build)", {}
    for line in p.stdout.splitlines():
        m = re.match(r"\s+Running (?:unittests )?(\S+\.rs) ", line)
        if m:
            unit = m.group(1)
            continue
        if re.match(r"\s+Doc-tests ", line):
            unit = "src/lib.rs"
            continue
        m = re.match(r"test (.+?) \.\.\. (ok|FAILED|ignored)", line)
        if m:
            name = m.group(1)
            name = re.sub(r" - should panic$", "", name)
            # a doc test's name carries its line, which any edit above it
            # moves: the hand run compares doc tests by item.
            if " (line " in name:
                stem, k = re.sub(r" \(line \d+\)$", "", name), 1
                while unit + "::" + stem + (f" #{k}" if k > 1 else "") in res:
                    k += 1
                name = stem + (f" #{k}" if k > 1 else "")
            res[unit + "::" + name] = {"ok": "pass", "FAILED": "fail", "ignored": "skip"}[m.group(2)]
            continue
        m = re.match(r"---- (.+?) stdout ----", line)
        if m:
            fails["cur"] = m.group(1)
            continue
        if fails.get("cur") and ("panicked at" in line or "assertion" in line or line.startswith("  left") or "called `" in line):
            for k in res:
                if k.endswith("::" + fails["cur"]) and k not in out:
                    out[k] = re.sub(r"^(thread '[^']*') \(\d+\)", r"\1", line.strip())
    errs = [l for l in p.stdout.splitlines() if l.startswith("error")]
    if errs and not any(v == "fail" for v in res.values()) or (errs and "could not compile" in p.stdout):
        res["(build)"] = "fail"
        out["(build)"] = errs[0]
    return res, out


# ---- JavaScript and TypeScript ------------------------------------------

JS_RUNNERS = os.path.join(HERE, "..", "..", "..", "..", "verify", "javascript", "testdata")
JS_EXT = (".js", ".mjs", ".cjs", ".ts", ".mts", ".cts", ".jsx", ".tsx")


def js_runner(dir_):
    """The runner a project's package.json picks, in verify/javascript's
    order: its test script, a config file, a dependency, else node --test."""
    try:
        pkg = json.load(open(os.path.join(dir_, "package.json")))
    except (OSError, ValueError):
        pkg = {}
    script = (pkg.get("scripts") or {}).get("test", "")
    m = re.search(r"(^|[\s/;&|(])(vitest|jest)(\s|$|;|&|\|)", script)
    if m:
        return m.group(2)
    if re.search(r"(^|[\s;&|(])node\s[^;&|]*--test(\s|$|[;&|])", script):
        return "node"
    names = os.listdir(dir_)
    if any(n.startswith("vitest.config.") for n in names):
        return "vitest"
    if any(n.startswith("jest.config.") for n in names) or "jest" in pkg:
        return "jest"
    deps = dict(pkg.get("dependencies") or {}, **(pkg.get("devDependencies") or {}))
    return "vitest" if "vitest" in deps else "jest" if "jest" in deps else "node"


def js_modules(dir_):
    """node_modules for the package-lock.json in dir_: `npm ci
    --ignore-scripts` of its package.json and lock alone, in a cache keyed
    as verify/javascript's Packages keys it (shared with its tests)."""
    try:
        manifest = open(os.path.join(dir_, "package.json"), "rb").read()
        lock = open(os.path.join(dir_, "package-lock.json"), "rb").read()
    except OSError:
        return None
    key = hashlib.sha256(manifest + b"\0" + lock).hexdigest()[:32]
    cache = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "bcode-test", "packages")
    final = os.path.join(cache, key)
    if not os.path.isdir(os.path.join(final, "node_modules")):
        os.makedirs(cache, exist_ok=True)
        tmp = tempfile.mkdtemp(dir=cache, prefix=".install-")
        open(os.path.join(tmp, "package.json"), "wb").write(manifest)
        open(os.path.join(tmp, "package-lock.json"), "wb").write(lock)
        subprocess.run(["npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error",
                        "--cache", os.path.join(cache, ".npm-cache")], cwd=tmp, check=True)
        os.rename(tmp, final)
    return os.path.join(final, "node_modules")


def js_id(file, names):
    """A test's ID as verify/javascript names it: file, then its describe
    path and name joined by " › "."""
    return " › ".join([file] + list(names))


def run_js(dir_):
    """The project's runner, plain, in dir_: vitest run and jest with their
    JSON reporters, node --test with its junit reporter."""
    mods = js_modules(dir_)
    if mods:
        os.symlink(mods, os.path.join(dir_, "node_modules"))
    runner = js_runner(dir_)
    report = os.path.join(dir_, ".report")
    env = dict(os.environ)
    # the plain run is a developer's: vitest refuses .only under CI, and
    # commander's tests read the colour variables.
    for k in ("CI", "FORCE_COLOR", "NO_COLOR", "CLICOLOR_FORCE"):
        env.pop(k, None)
    env.pop("NODE_OPTIONS", None)
    if runner == "node":
        node = ["node", "--test", "--test-reporter=junit", "--test-reporter-destination=" + report]
        if mods and os.path.isdir(os.path.join(mods, "tsx")):
            node[1:1] = ["--import", "tsx"]
        p = subprocess.run(node, cwd=dir_, env=env, capture_output=True, text=True)
        return js_junit(dir_, report, p)
    if runner == "vitest":
        cmd = ["node", os.path.join(dir_, "node_modules", "vitest", "vitest.mjs"), "run", "--reporter=json", "--outputFile=" + report]
    else:
        cmd = ["node", os.path.join(dir_, "node_modules", "jest", "bin", "jest.js"), "--ci", "--json", "--outputFile=" + report]
    p = subprocess.run(cmd, cwd=dir_, env=env, capture_output=True, text=True)
    if not os.path.exists(report):
        return {"(" + runner + ")": "fail"}, {"(" + runner + ")": (p.stderr.strip().splitlines() or ["no report"])[-1][:160]}
    res, out = {}, {}
    for f in json.load(open(report)).get("testResults", []):
        rel = os.path.relpath(f["name"], dir_)
        if not f.get("assertionResults") and f.get("status") == "failed":
            res[js_id(rel, ["(load)"])] = "fail"
            out[js_id(rel, ["(load)"])] = (f.get("message") or "").strip().split("\n")[0][:160]
        for a in f.get("assertionResults", []):
            tid = js_id(rel, a.get("ancestorTitles", []) + [a["title"]])
            st = {"passed": "pass", "failed": "fail", "pending": "skip", "skipped": "skip", "todo": "skip", "disabled": "skip"}.get(a["status"], a["status"])
            res[tid] = st
            if st == "fail":
                msg = [l.strip() for l in "\n".join(a.get("failureMessages") or []).splitlines() if l.strip()]
                out[tid] = (msg[0] if msg else "")[:160]
    os.remove(report)
    return res, out


def js_junit(dir_, report, p):
    """node --test's junit report: a testsuite per describe, a testcase
    per test; the file is the testcase's file attribute."""
    if not os.path.exists(report):
        return {"(node --test)": "fail"}, {"(node --test)": (p.stderr.strip().splitlines() or ["no report"])[-1][:160]}
    res, out = {}, {}

    def walk(el, names):
        for child in el:
            if child.tag == "testsuite":
                walk(child, names + [child.get("name", "")])
            elif child.tag == "testcase":
                f = child.get("file", "")
                rel = os.path.relpath(f, dir_) if f else "?"
                tid = js_id(rel, names + [child.get("name", "")])
                st = "pass"
                for c in child:
                    if c.tag == "failure":
                        st = "fail"
                        out[tid] = (c.get("message") or c.text or "").strip().split("\n")[0][:160]
                    elif c.tag == "skipped":
                        st = "skip"
                res[tid] = st
    walk(ET.parse(report).getroot(), [])
    os.remove(report)
    return res, out


def check(path, write):
    header, base, head = resolve(path)
    python = any(k.endswith(".py") for k in list(base) + list(head))
    rust = any(k.endswith(".rs") for k in list(base) + list(head))
    js = not python and not rust and any(k.endswith(JS_EXT) for k in list(base) + list(head))
    run = run_py if python else run_rust if rust else run_js if js else run_go
    results = {}
    headfull = {k: v for k, v in dict(base, **head).items() if v.strip() != "<deleted>"}
    # "mid": the base's code with the head's tests; "old": the head's code
    # with the base's tests (old tests on new code). Each is a whole tree.
    layouts = {"base": base, "mid": mixed(base, headfull, rust), "head": headfull, "old": mixed(headfull, base, rust)}
    with tempfile.TemporaryDirectory() as tmp:
        for side in ("base", "mid", "head", "old"):
            d = os.path.join(tmp, side)
            os.makedirs(d)
            materialize(d, layouts[side], {})
            results[side] = run(d)
    (rb, ob), (rm, om), (rh, oh), (ro, oo) = results["base"], results["mid"], results["head"], results["old"]
    count = lambda r: ", ".join(f"{sum(1 for v in r.values() if v == s)} {s}" for s in ("pass", "fail", "error", "skip", "xfail") if any(v == s for v in r.values())) or "no tests"
    plain = "pytest" if python else "cargo test --offline" if rust else "go test ./..." if not js else {"node": "node --test"}.get(js_runner_of(base), js_runner_of(base) + " run" if js_runner_of(base) == "vitest" else "jest")
    ev = [f"plain runs ({plain}): base {count(rb)}; base with head's tests {count(rm)}; head {count(rh)}"]
    f2p = [t for t in rm if rm[t] in ("fail", "error") and rh.get(t) == "pass"]
    for t in f2p:
        ev.append(f"fail-to-pass {t}: base with head's tests {rm[t]} ({om.get(t, '')[:140]}); head pass")
    for t in sorted(set(rb) | set(rh)):
        b, h = rb.get(t, "absent"), rh.get(t, "absent")
        if b != h and not (b == "absent" and h == "pass"):
            ev.append(f"base {b}, head {h}: {t}" + (f" ({oh.get(t, '')[:140]})" if h in ("fail", "error") else ""))
    for t in sorted(rm):
        if t.startswith("(package") and any(v in ("fail", "error") for k, v in rm.items() if not k.startswith("(")):
            continue
        if rm[t] in ("fail", "error") and t not in f2p and rh.get(t) != rm[t]:
            ev.append(f"base with head's tests {rm[t]}, head {rh.get(t, 'absent')}: {t} ({om.get(t, '')[:140]})")
    for t in sorted(rh):
        if rh[t] in ("fail", "error") and rb.get(t) in ("fail", "error"):
            ev.append(f"fails on base and head: {t}")
    for t in sorted(ro):
        if ro[t] in ("fail", "error") and rb.get(t) == "pass":
            ev.append(f"base's tests on the head's code: {t} passes on the base, {ro[t]}s on the head's code ({oo.get(t, '')[:140]})")
    print(f"== {os.path.basename(path)}  [{header_get(header, 'verdict')}]")
    for e in ev:
        print("   " + e)
    if write:
        lines = [l for l in header.splitlines() if not l.startswith("evidence:")]
        # a test's name may hold control characters (ufo names tests by
        # their input, "\0javascript:"): written escaped, as \xNN.
        lines += ["evidence: " + re.sub(r"[\x00-\x1f]", lambda m: "\\x%02x" % ord(m.group(0)), e.replace("\n", " ")) for e in ev]
        _, files = parse_txtar(path)
        write_txtar(path, "\n".join(lines) + "\n", files)


def js_runner_of(files):
    """js_runner of a layout not yet written out."""
    with tempfile.TemporaryDirectory() as d:
        for k in ("package.json",) + tuple(k for k in files if k.startswith(("vitest.config.", "jest.config."))):
            if k in files:
                open(os.path.join(d, k), "w").write(files[k])
        return js_runner(d)


def new(a):
    parent = a.commit + "~1"
    base = tree(a.repo, parent, a.keep)
    head = tree(a.repo, a.commit, a.keep)
    if a.gomod:
        for side in (base, head):
            side.setdefault("go.mod", f"module {a.gomod}\n\ngo 1.16\n")
    if a.js:
        for name in ("package.json", "package-lock.json"):
            data = open(os.path.join(JS_RUNNERS, a.js, name)).read()
            base[name], head[name] = data, data
    files = {}
    for k in sorted(base):
        files["base/" + k] = base[k]
    for k in sorted(set(base) | set(head)):
        if k not in head:
            files["head/" + k] = "<deleted>\n"
        elif base.get(k) != head[k]:
            files["head/" + k] = head[k]
    subject = git(a.repo, "log", "-1", "--format=%s", a.commit).strip()
    header = "\n".join([
        "verdict: TODO", "kind: TODO", "why: TODO",
        f"source: {a.source}", f"commit: {git(a.repo, 'rev-parse', a.commit).strip()}",
        f"subject: {subject}",
        "trimmed: " + " ".join(a.keep) + (f" (go.mod synthesized: module {a.gomod})" if a.gomod else "")
        + (f" (package.json and package-lock.json synthesized: {' and '.join(sorted(json.loads(base['package.json'])['devDependencies']))} only, pinned as verify/javascript/testdata/{a.js})" if a.js else ""),
    ]) + "\n"
    out = os.path.join(HERE, a.name + ".txtar")
    write_txtar(out, header, files)
    print(f"wrote {out}: {len(base)} base files, {sum(1 for k in files if k.startswith('head/'))} changed; {os.path.getsize(out)} bytes")
    check(out, True)


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    n = sub.add_parser("new")
    n.add_argument("name")
    n.add_argument("--repo", required=True)
    n.add_argument("--commit", required=True)
    n.add_argument("--source", required=True)
    n.add_argument("--keep", nargs="+", required=True)
    n.add_argument("--gomod")
    n.add_argument("--js", choices=("vitest", "jest"))
    c = sub.add_parser("check")
    c.add_argument("files", nargs="+")
    c.add_argument("--write", action="store_true")
    a = ap.parse_args()
    if a.cmd == "new":
        new(a)
    else:
        for f in a.files:
            check(f, a.write)


if __name__ == "__main__":
    main()
