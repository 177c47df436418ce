"""bcode's syntax helper: what pytest would collect, and what a test imports.

Reads {"mode": "tests"|"imports", "files": [{"path": p, "source": base64}]}
as JSON on stdin and writes one JSON object on stdout. It only parses: no
code of the repository is imported or run, and no file is read or written.
The syntax tree comes from this interpreter's own `ast` module, so the
answer matches the Python that runs the tests.
"""

import ast
import base64
import json
import sys

# Canonical names of everything that turns a test into a skip (or an expected
# failure, which hides a failing test just as well).
SKIP_MARKERS = {
    "pytest.mark.skip", "pytest.mark.skipif", "pytest.mark.xfail",
    "unittest.skip", "unittest.skipIf", "unittest.skipUnless",
    "unittest.expectedFailure",
    "unittest.case.skip", "unittest.case.skipIf", "unittest.case.skipUnless",
    "unittest.case.expectedFailure",
}
SKIP_CALLS = {"pytest.skip", "pytest.xfail", "pytest.importorskip", "pytest.skip.Exception"}
SKIP_RAISES = {"unittest.SkipTest", "unittest.case.SkipTest", "pytest.skip.Exception"}
TESTCASE_BASES = ("TestCase", "IsolatedAsyncioTestCase")
FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)


def dump(node):
    # Attributes (line and column numbers) are left out, so moving code or
    # changing comments and blank lines does not change a test.
    return ast.dump(node, include_attributes=False)


class Names:
    """Resolves local names to canonical dotted names (`pt` -> `pytest`)."""

    def __init__(self, tree):
        self.alias = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.asname:
                        self.alias[a.asname] = a.name
                    else:
                        top = a.name.split(".")[0]
                        self.alias.setdefault(top, top)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for a in node.names:
                    if a.name != "*":
                        self.alias[a.asname or a.name] = node.module + "." + a.name
        # A marker bound to a module-level name (`slow = pytest.mark.skip(...)`)
        # skips whatever it decorates.
        for stmt in getattr(tree, "body", []):
            if isinstance(stmt, ast.Assign):
                hit = self.first_marker(stmt.value)
                if hit:
                    for t in stmt.targets:
                        if isinstance(t, ast.Name):
                            self.alias[t.id] = hit

    def dotted(self, node):
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return None
        parts.append(self.alias.get(node.id, node.id))
        return ".".join(reversed(parts))

    def first_marker(self, expr):
        for node in ast.walk(expr):
            if isinstance(node, (ast.Name, ast.Attribute)):
                d = self.dotted(node)
                if d in SKIP_MARKERS:
                    return d
        return None

    def markers(self, expr):
        """Skip markers inside a decorator or an assignment's value."""
        out = []
        callee = set()
        for node in ast.walk(expr):
            if isinstance(node, ast.Call):
                callee.add(id(node.func))
        for node in ast.walk(expr):
            if isinstance(node, ast.Call):
                d = self.dotted(node.func)
                if d in SKIP_MARKERS:
                    out.append(hit(d, node))
            elif isinstance(node, (ast.Name, ast.Attribute)) and id(node) not in callee:
                d = self.dotted(node)
                if d in SKIP_MARKERS:
                    out.append(hit(d, node))
        return out

    def calls(self, stmts):
        """Imperative skips: pytest.skip(), self.skipTest(), raise SkipTest."""
        out = []
        for stmt in stmts:
            for node in ast.walk(stmt):
                if isinstance(node, ast.Call):
                    d = self.dotted(node.func)
                    if d in SKIP_CALLS:
                        out.append(hit(d, node))
                    elif isinstance(node.func, ast.Attribute) and node.func.attr == "skipTest":
                        out.append(hit("skipTest", node))
                elif isinstance(node, ast.Raise) and node.exc is not None:
                    exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
                    d = self.dotted(exc)
                    if d in SKIP_RAISES:
                        out.append(hit(d, node))
        return out


def hit(what, node):
    return {"what": what, "line": getattr(node, "lineno", 0), "dump": dump(node)}


def is_test_class(cls, names):
    if cls.name.startswith("Test"):
        # pytest refuses to collect a Test* class that defines __init__.
        return not any(isinstance(n, FUNCS) and n.name == "__init__" for n in cls.body)
    for b in cls.bases:
        d = names.dotted(b)
        if d and d.split(".")[-1] in TESTCASE_BASES:
            return True
    return False


def test_entry(fn, qual, names):
    skips = []
    for dec in fn.decorator_list:
        skips.extend(names.markers(dec))
    skips.extend(names.calls(fn.body))
    return {"name": qual, "line": fn.lineno, "dump": dump(fn), "skips": skips}


def class_skips(cls, names):
    skips = []
    for dec in cls.decorator_list:
        skips.extend(names.markers(dec))
    for stmt in cls.body:
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
            skips.extend(names.markers(stmt.value))
    return skips


def collect_class(cls, prefix, names, tests, classes):
    qual = prefix + cls.name
    classes.append({"name": qual, "line": cls.lineno, "skips": class_skips(cls, names)})
    for node in cls.body:
        if isinstance(node, FUNCS) and node.name.startswith("test"):
            tests.append(test_entry(node, qual + "::" + node.name, names))
        elif isinstance(node, ast.ClassDef) and is_test_class(node, names):
            collect_class(node, qual + "::", names, tests, classes)


def module_skips(tree, names):
    skips = []
    for stmt in tree.body:
        if isinstance(stmt, FUNCS + (ast.ClassDef,)):
            continue
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
            skips.extend(names.markers(stmt.value))
        skips.extend(names.calls([stmt]))
    return skips


def imports(tree):
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                out.append({"module": a.name, "names": [], "level": 0, "line": node.lineno})
        elif isinstance(node, ast.ImportFrom):
            out.append({"module": node.module or "", "names": [a.name for a in node.names],
                        "level": node.level or 0, "line": node.lineno})
    return out


def analyze(path, source, mode):
    out = {"path": path}
    try:
        return analyze_tree(out, ast.parse(source, filename=path), mode)
    except SyntaxError as e:
        out["error"] = {"line": e.lineno or 0, "msg": e.msg or str(e)}
    except (ValueError, RecursionError, MemoryError) as e:
        # Null bytes, or nesting too deep for the parser or for dump().
        out["error"] = {"line": 0, "msg": "%s: %s" % (type(e).__name__, e)}
    return out


def analyze_tree(out, tree, mode):
    if mode == "imports":
        out["imports"] = imports(tree)
        return out
    names = Names(tree)
    tests, classes = [], []
    for node in tree.body:
        if isinstance(node, FUNCS) and node.name.startswith("test"):
            tests.append(test_entry(node, node.name, names))
        elif isinstance(node, ast.ClassDef) and is_test_class(node, names):
            collect_class(node, "", names, tests, classes)
    out["tests"] = tests
    out["classes"] = classes
    out["module_skips"] = module_skips(tree, names)
    return out


def main():
    req = json.load(sys.stdin)
    mode = req.get("mode", "tests")
    files = []
    for f in req.get("files") or []:
        files.append(analyze(f["path"], base64.b64decode(f.get("source") or ""), mode))
    # The interpreter's real path lets bcode skip launcher shims (pyenv) on
    # later runs.
    json.dump({"python": sys.executable, "files": files}, sys.stdout)


if __name__ == "__main__":
    main()
