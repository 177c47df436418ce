"""bcode's Python indexer for context packs.

Reads {"files": [{"path": p, "source": text}]} as JSON on stdin and writes
{"files": [...]} on stdout: per file its imports, and its functions, methods
and classes with their lines, signatures and the names their bodies call or
refer to. It only parses with this interpreter's own `ast`: no code of the
repository is imported or run, and no file is read or written.
"""

import ast
import json
import sys

FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)


def signature(lines, node):
    first = node.lineno
    if node.body:
        last = max(first, node.body[0].lineno - 1)
    else:
        last = first
    text = " ".join(l.strip() for l in lines[first - 1:last])
    # A docstring or body on the same line as the def is cut off.
    depth = 0
    for i, ch in enumerate(text):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == ":" and depth == 0 and (i + 1 == len(text) or text[i + 1] in " #\t"):
            text = text[: i + 1]
            break
    return text[:300]


class Uses(ast.NodeVisitor):
    def __init__(self):
        self.calls = []
        self.refs = set()

    def visit_Call(self, node):
        f = node.func
        if isinstance(f, ast.Name):
            self.calls.append(["name", f.id])
        elif isinstance(f, ast.Attribute):
            base = f.value
            if isinstance(base, ast.Name) and base.id in ("self", "cls"):
                self.calls.append(["self", f.attr])
            elif isinstance(base, ast.Name):
                self.calls.append(["attr", f.attr, base.id])
            else:
                self.calls.append(["attr", f.attr, ""])
        self.generic_visit(node)

    def visit_Name(self, node):
        self.refs.add(node.id)

    def visit_Attribute(self, node):
        if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
            self.refs.add("self." + node.attr)
        self.generic_visit(node)

    # Nested definitions are part of their enclosing function's body.


def uses(node):
    u = Uses()
    for child in node.body:
        u.visit(child)
    for d in getattr(node, "decorator_list", []):
        u.visit(d)
    return u


def index(path, source):
    tree = ast.parse(source, filename=path)
    lines = source.splitlines()
    imports = []
    defs = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            for a in node.names:
                imports.append({"module": ("." * node.level) + (node.module or ""), "name": a.name, "as": a.asname or a.name})
        elif isinstance(node, ast.Import):
            for a in node.names:
                imports.append({"module": a.name, "name": "", "as": a.asname or a.name.split(".")[0]})

    def add(node, cls, kind):
        start = node.lineno
        if getattr(node, "decorator_list", None):
            start = min(d.lineno for d in node.decorator_list)
        u = uses(node)
        d = {
            "name": node.name,
            "class": cls,
            "kind": kind,
            "line": start,
            "end": getattr(node, "end_lineno", node.lineno) or node.lineno,
            "sig": signature(lines, node),
            "calls": u.calls,
            "refs": sorted(u.refs),
        }
        if kind == "class":
            d["bases"] = [b.id if isinstance(b, ast.Name) else (b.attr if isinstance(b, ast.Attribute) else "") for b in node.bases]
        defs.append(d)

    for node in tree.body:
        if isinstance(node, FUNCS):
            add(node, "", "func")
        elif isinstance(node, ast.ClassDef):
            add(node, "", "class")
            for sub in node.body:
                if isinstance(sub, FUNCS):
                    add(sub, node.name, "method")
    return {"imports": imports, "defs": defs}


def main():
    req = json.load(sys.stdin)
    out = []
    for f in req["files"]:
        try:
            info = index(f["path"], f["source"])
            info["path"] = f["path"]
        except (SyntaxError, ValueError, RecursionError, MemoryError) as e:
            info = {"path": f["path"], "error": type(e).__name__}
        out.append(info)
    json.dump({"files": out}, sys.stdout)


main()
