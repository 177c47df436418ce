"""bcode's Python mutation engine, run by the repository's own interpreter.

    python -I -S -B pymutate.py gen  < request.json   (mutants of changed lines)
    python -I -B pymutate.py run CONFIG.json           (a session or a fresh run)

gen only parses (Python's own ast and tokenize); it imports nothing of the
repository. run imports the repository's code and pytest: it is started by
bcode's runner (scrubbed environment, a snapshot outside the user's checkout)
with -I (no PYTHON* variables, no user site, no script directory on sys.path).
A session (Session) generates as gen does, in a child forked before anything
of the repository is imported, while it imports pytest itself.

Mutant schemata: each target module is compiled, through an import hook,
from its own AST with every mutant behind a switch, so one interpreter
imports and collects once, and the baseline and the workers are forks of
that collected state. Mutants' covering tests then run in forked children with the
switch set to each mutant in turn: several mutants per child while the state
a run could leave behind stays as the fork found it (StateGuard), a new child
otherwise; the parent kills a child that spends a mutant's CPU budget, or
waits past its wall-time one.
"""

import ast
import bisect
import hashlib
import json
import os
import sys
import time

SEL_NAME = "__bcode_sel__"
SEL = [0]  # the active mutant's number; 0 is none
# What a forked child may spend before its first mutant starts, and between
# two (the fork, the state check): CPU seconds, and wall seconds for a child
# that waits instead.
FORK_CPU = 60.0
FORK_WALL = 600.0
# How often the parent reads its child's CPU time.
CPU_POLL = 0.1


def clock_ticks():
    try:
        return os.sysconf("SC_CLK_TCK")
    except (AttributeError, ValueError, OSError):
        return 100


CLK_TCK = clock_ticks()


def cpu_seconds(pid):
    """The CPU time pid has used, user and system, with its children that
    ended: the kernel's own accounting, from /proc/PID/stat (fields 14 to
    17). CPU time is the work done, not the time spent waiting for a core,
    so a budget in it does not run out faster on a busy machine. None where
    there is no /proc (the budgets are then wall time)."""
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            data = f.read()
        fields = data[data.rindex(b")") + 2:].split()
        return sum(int(x) for x in fields[11:15]) / CLK_TCK
    except (OSError, ValueError, IndexError):
        return None

# ---------------------------------------------------------------- generation

BOUNDARY = {ast.Lt: "<=", ast.LtE: "<", ast.Gt: ">=", ast.GtE: ">"}
NEGATION = {ast.Eq: "!=", ast.NotEq: "==", ast.Lt: ">=", ast.LtE: ">", ast.Gt: "<=", ast.GtE: "<"}
IDENTITY = {ast.Is: "is not", ast.IsNot: "is"}
MEMBERSHIP = {ast.In: "not in", ast.NotIn: "in"}
IGNORE = ("bcode: ignore-mutant", "bcode:ignore-mutant")


class Source:
    def __init__(self, data):
        self.data = data
        self.starts = [0]
        for i, b in enumerate(data):
            if b == 0x0A:
                self.starts.append(i + 1)

    def off(self, line, col):
        return self.starts[line - 1] + col

    def span(self, node):
        return self.off(node.lineno, node.col_offset), self.off(node.end_lineno, node.end_col_offset)

    def text(self, a, b):
        return self.data[a:b].decode("utf-8")

    def line_of(self, off):
        lo, hi = 0, len(self.starts) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.starts[mid] <= off:
                lo = mid
            else:
                hi = mid - 1
        return lo + 1


def find_op(src, a, b):
    """The operator between byte offsets a and b (operands' ends): skips
    whitespace, parentheses, line continuations and comments. Returns the
    operator's start and end offsets (a two-word operator spans both)."""
    d = src.data
    i = a
    words = []
    while i < b:
        c = d[i:i + 1]
        if c in (b" ", b"\t", b"\r", b"\n", b"(", b")", b"\\", b"\f"):
            i += 1
            continue
        if c == b"#":
            while i < b and d[i:i + 1] != b"\n":
                i += 1
            continue
        j = i
        if c.isalpha():
            while j < b and (d[j:j + 1].isalnum() or d[j:j + 1] == b"_"):
                j += 1
        else:
            while j < b and d[j:j + 1] in b"<>=!+-":
                j += 1
        if j == i:
            return None
        words.append((i, j))
        i = j
    if not words:
        return None
    return words[0][0], words[-1][1]


def is_int_const(n):
    if isinstance(n, ast.Constant) and type(n.value) is int:
        return n.value
    if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub) and isinstance(n.operand, ast.Constant) and type(n.operand.value) is int:
        return -n.operand.value
    return None


def is_len_call(n):
    return isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "len" and len(n.args) == 1 and not n.keywords


def literal(n):
    try:
        return True, ast.literal_eval(n)
    except Exception:
        return False, None


ARITH = (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod, ast.LShift, ast.RShift)


class Gen:
    """Walks one module and records every mutant, in source order."""

    def __init__(self, src, tree):
        self.src = src
        self.tree = tree
        self.out = []
        self.names = []  # qualified-name stack
        self.depth = 0  # >0 inside a function body (runtime code)
        self.gen_fn = []  # is the enclosing function a generator / __init__

    def add(self, op, node, repl, hot_line, **extra):
        a, b = self.src.span(node)
        m = {
            "func": ".".join(self.names),
            "op": op,
            "start": a,
            "end": b,
            "line": node.lineno,
            "col": node.col_offset + 1,
            "end_line": node.end_lineno,
            "end_col": node.end_col_offset + 1,
            "hot": hot_line,
            "original": self.src.text(a, b),
            "mutated": repl,
            "import_time": self.depth == 0,
        }
        m.update(extra)
        self.out.append(m)
        return m

    # parents: the chain of ancestors, nearest last.
    def visit(self, node, parents):
        if isinstance(node, (ast.JoinedStr, ast.pattern)):
            return  # f-string positions are unreliable before 3.12; patterns are not expressions
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for d in node.decorator_list:
                self.visit(d, parents + [node])
            for d in node.args.defaults + [x for x in node.args.kw_defaults if x is not None]:
                self.visit(d, parents + [node])
            self.names.append(node.name)
            self.depth += 1
            self.gen_fn.append(node.name == "__init__" or any(isinstance(x, (ast.Yield, ast.YieldFrom)) for x in walk_own(node)))
            for s in node.body:
                self.visit(s, parents + [node])
            self.gen_fn.pop()
            self.depth -= 1
            self.names.pop()
            return
        if isinstance(node, ast.ClassDef):
            for d in node.decorator_list + node.bases + [k.value for k in node.keywords]:
                self.visit(d, parents + [node])
            self.names.append(node.name)
            for s in node.body:
                self.visit(s, parents + [node])
            self.names.pop()
            return
        if isinstance(node, ast.Lambda):
            self.depth += 1
            self.visit(node.body, parents + [node])
            self.depth -= 1
            return
        if isinstance(node, ast.AnnAssign):
            if node.value is not None:
                self.visit(node.value, parents + [node])
            return
        self.mutate(node, parents)
        for child in ast.iter_child_nodes(node):
            self.visit(child, parents + [node])

    def mutate(self, node, parents):
        if isinstance(node, ast.Compare):
            self.compare(node)
        elif isinstance(node, (ast.If, ast.While, ast.IfExp)):
            self.condition(node.test)
        elif isinstance(node, ast.comprehension):
            for c in node.ifs:
                self.condition(c)
        elif isinstance(node, ast.BoolOp):
            for v in node.values:
                self.condition(v)
        elif isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
            self.arith(node, parents)
        elif isinstance(node, ast.UnaryOp) and is_int_const(node) is not None:
            self.constant(node, parents)
        elif isinstance(node, ast.Constant) and type(node.value) is int and not (
                parents and isinstance(parents[-1], ast.UnaryOp) and isinstance(parents[-1].op, ast.USub)):
            self.constant(node, parents)
        elif isinstance(node, ast.Return) and node.value is not None and self.depth > 0:
            self.ret(node)

    def compare(self, node):
        operands = [node.left] + node.comparators
        for i, op in enumerate(node.ops):
            a = self.src.span(operands[i])[1]
            b = self.src.span(operands[i + 1])[0]
            at = find_op(self.src, a, b)
            if at is None:
                continue
            s, e = self.src.span(node)

            def swapped(to):
                return self.src.text(s, at[0]) + to + self.src.text(at[1], e)

            hot = self.src.line_of(at[0])
            t = type(op)
            if t in BOUNDARY:
                self.add("conditional_boundary", node, swapped(BOUNDARY[t]), hot, cmp_index=i, to=BOUNDARY[t])
            if t in NEGATION:
                self.add("relational_negation", node, swapped(NEGATION[t]), hot, cmp_index=i, to=NEGATION[t])
            if t in IDENTITY:
                self.add("identity_negation", node, swapped(IDENTITY[t]), hot)
            if t in MEMBERSHIP:
                self.add("membership_negation", node, swapped(MEMBERSHIP[t]), hot)

    def condition(self, e):
        if isinstance(e, (ast.Compare, ast.BoolOp)):
            return
        if isinstance(e, ast.Constant):
            return
        if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.Not):
            inner = self.src.text(*self.src.span(e.operand))
            if isinstance(e.operand, (ast.BoolOp, ast.IfExp, ast.Lambda, ast.NamedExpr, ast.Compare)):
                inner = "(" + inner + ")"
            self.add("condition_negation", e, inner, e.lineno)
            return
        text = self.src.text(*self.src.span(e))
        if isinstance(e, (ast.Name, ast.Call, ast.Attribute, ast.Subscript)):
            repl = "not " + text
        else:
            repl = "not (" + text + ")"
        self.add("condition_negation", e, repl, e.lineno)

    def index_context(self, node, parents):
        """Whether node sits in an index or slice bound through arithmetic
        and parentheses only."""
        child = node
        for p in reversed(parents):
            if isinstance(p, ast.BinOp) and isinstance(p.op, ARITH):
                child = p
                continue
            if isinstance(p, ast.UnaryOp) and isinstance(p.op, (ast.USub, ast.UAdd)):
                child = p
                continue
            if isinstance(p, ast.Slice):
                return child in (p.lower, p.upper, p.step)
            if isinstance(p, ast.Subscript):
                return child is p.slice
            return False
        return False

    def arith(self, node, parents):
        if not (self.index_context(node, parents) or is_len_call(node.left) or is_len_call(node.right)):
            return
        for side in (node.left, node.right):
            if isinstance(side, (ast.JoinedStr, ast.List, ast.Tuple)) or (isinstance(side, ast.Constant) and not isinstance(side.value, (int, float))):
                return  # string or sequence concatenation: not index arithmetic
        at = find_op(self.src, self.src.span(node.left)[1], self.src.span(node.right)[0])
        if at is None:
            return
        s, e = self.src.span(node)
        to = "-" if isinstance(node.op, ast.Add) else "+"
        self.add("arith_index", node, self.src.text(s, at[0]) + to + self.src.text(at[1], e), self.src.line_of(at[0]))

    def constant(self, node, parents):
        v = is_int_const(node)
        if v is None:
            return
        cmp = None
        if parents and isinstance(parents[-1], ast.Compare):
            cmp = parents[-1]
        if cmp is None and not self.index_context(node, parents):
            return
        for d in (1, -1):
            extra = {}
            if cmp is not None:
                ops = [cmp.left] + cmp.comparators
                extra = {"cmp_start": self.src.span(cmp)[0], "operand": next(i for i, o in enumerate(ops) if o is node)}
            self.add("constant_bound", node, str(v + d), node.lineno, delta=d, **extra)

    def ret(self, node):
        if self.gen_fn and self.gen_fn[-1]:
            return
        v = node.value
        if isinstance(v, ast.Constant) and type(v.value) is bool:
            self.add("bool_literal", v, "False" if v.value else "True", v.lineno)
            return
        if isinstance(v, ast.Constant) and v.value is None:
            return
        self.add("none_return", v, "None", v.lineno)


def walk_own(fn):
    """The nodes of fn's body, not of nested functions or classes."""
    todo = list(fn.body)
    while todo:
        n = todo.pop()
        yield n
        for c in ast.iter_child_nodes(n):
            if not isinstance(c, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                todo.append(c)


def apply_text(data, m):
    return data[: m["start"]] + m["mutated"].encode("utf-8") + data[m["end"]:]


def ignores(src, tree, path):
    """Lines suppressed by '# bcode: ignore-mutant <reason>', and errors for
    directives without a reason. A directive covers its own line; alone on
    its line, the next line; on (or just above) a def, the whole function."""
    import io
    import tokenize

    lines, errors = {}, []
    try:
        toks = list(tokenize.tokenize(io.BytesIO(src.data).readline))
    except (tokenize.TokenError, SyntaxError):
        return lines, errors
    code_lines = set()
    for t in toks:
        if t.type not in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENCODING, tokenize.ENDMARKER):
            code_lines.add(t.start[0])
    defs = {}
    for n in ast.walk(tree):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
            first = min([n.lineno] + [d.lineno for d in n.decorator_list])
            for ln in range(first, n.lineno + 1):
                defs[ln] = (first, n.end_lineno)
    for t in toks:
        if t.type != tokenize.COMMENT:
            continue
        body = t.string[1:].strip()
        for d in IGNORE:
            if body.startswith(d) and (len(body) == len(d) or body[len(d)] in " \t"):
                reason = body[len(d):].strip()
                line = t.start[0]
                if not reason:
                    errors.append("%s:%d: # %s needs a reason (e.g. # %s equivalent: the loop bound is never reached)" % (path, line, IGNORE[0], IGNORE[0]))
                    break
                target = line if line in code_lines else line + 1
                if target in defs:
                    a, b = defs[target]
                    for ln in range(a, b + 1):
                        lines.setdefault(ln, reason)
                else:
                    lines.setdefault(target, reason)
                break
    return lines, errors


class TopLevel:
    """Parses a mutant's module from the top-level statements around it
    alone, the module's text split where a line starts a top-level
    statement: there the tokenizer starts afresh (column 0, no bracket or
    string open, no backslash continuation), so the mutated module parses
    exactly when its mutated slice does, and a module of hundreds of lines
    is not reparsed once per mutant. Where a file could make a slice read
    otherwise (an encoding declaration, a __future__ import, a lone carriage
    return) there are no slices."""

    def __init__(self, src, tree):
        self.src = src
        self.slices = []  # (start, end) offsets of whole lines, in order
        head = b"\n".join(src.data.split(b"\n", 2)[:2])
        if b"coding" in head or b"\r" in src.data.replace(b"\r\n", b""):
            return
        lines = []
        for st in tree.body:
            if isinstance(st, ast.ImportFrom) and st.module == "__future__":
                return
            first = min([st.lineno] + [d.lineno for d in getattr(st, "decorator_list", [])])
            # A statement sharing a line with the one before (";"), or after
            # a line that ends in a backslash, is one slice with it.
            if lines and (first <= lines[-1][1] or src.data[src.starts[first - 2]:src.starts[first - 1]].rstrip(b"\r\n").endswith(b"\\")):
                lines[-1][1] = max(lines[-1][1], st.end_lineno)
            else:
                lines.append([first, st.end_lineno])
        n = len(src.starts)
        for a, b in lines:
            self.slices.append((src.starts[a - 1], src.starts[b] if b < n else len(src.data)))

    def parses(self, m, path):
        """True when the module with m applied parses; None when only the
        whole module can say."""
        i = bisect.bisect_right(self.slices, (m["start"], float("inf"))) - 1
        if i < 0 or m["end"] > self.slices[i][1]:
            return None
        a, b = self.slices[i]
        text = self.src.data[a:m["start"]] + m["mutated"].encode("utf-8") + self.src.data[m["end"]:b]
        if text.rstrip(b"\r\n").endswith(b"\\"):
            return None  # a backslash continuing into the next slice: it reads on there
        try:
            compile(text, path, "exec", dont_inherit=True, flags=ast.PyCF_ONLY_AST)
        except (SyntaxError, ValueError):
            return None  # the whole module's parse gives the reason
        return True


def prune(src, tree, path, ms, whole=False):
    """Sets m["pruned"] to the reason a mutant cannot build or cannot differ.
    whole: parse the whole module for every mutant, as before TopLevel (the
    test that both prune alike)."""
    top = TopLevel(src, ast.Module(body=[], type_ignores=[]) if whole else tree)
    seen = {}
    by_const = {}
    for m in ms:
        if m["op"] == "conditional_boundary":
            by_const[(m["start"], m.get("cmp_index"))] = m
    for m in ms:
        key = (m["start"], m["end"], m["mutated"])
        if key in seen:
            m["pruned"] = "the same code as the %s mutant at line %d" % (seen[key]["op"], seen[key]["line"])
            continue
        seen[key] = m
        try:
            if not top.parses(m, path):
                compile(apply_text(src.data, m), path, "exec", dont_inherit=True, flags=ast.PyCF_ONLY_AST)
        except (SyntaxError, ValueError) as e:
            m["pruned"] = "does not compile: %s" % (e.msg if isinstance(e, SyntaxError) else e)
            continue
        why = constant_compare(src, m)
        if why:
            m["pruned"] = why
            continue
        twin = boundary_twin(tree, src, m, by_const)
        if twin:
            m["pruned"] = "cannot differ from the conditional_boundary mutant %s on integers" % twin["mutated"]


def node_at(tree, src, start, end):
    for n in ast.walk(tree):
        if isinstance(n, ast.expr) and src.span(n) == (start, end):
            return n
    return None


def constant_compare(src, m):
    """A comparison whose operands are all literals cannot change its value
    when the mutant gives the same one."""
    if m["op"] not in ("conditional_boundary", "relational_negation", "identity_negation", "membership_negation"):
        return ""
    try:
        orig = ast.parse("(" + m["original"] + ")", mode="eval").body
        mut = ast.parse("(" + m["mutated"] + ")", mode="eval").body
    except SyntaxError:
        return ""
    vals = []
    for e in (orig, mut):
        if not isinstance(e, ast.Compare):
            return ""
        ok = all(literal(o)[0] for o in [e.left] + e.comparators)
        if not ok:
            return ""
        try:
            vals.append(eval(compile(ast.Expression(e), "<const>", "eval"), {"__builtins__": {}}))
        except Exception:
            return ""
    if vals[0] == vals[1]:
        return "cannot differ: original and mutant are both the constant %r" % (vals[0],)
    return ""


def boundary_twin(tree, src, m, by_const):
    """On integers, x < 10+1 is x <= 10 and x >= 10+1 is x > 10: the constant
    mutant duplicates the boundary one. Only where the other operand is
    certainly an integer (len(...) or an integer literal)."""
    if m["op"] != "constant_bound" or "cmp_start" not in m:
        return None
    cmp = None
    for n in ast.walk(tree):
        if isinstance(n, ast.Compare) and src.span(n)[0] == m["cmp_start"] and len(n.ops) == 1:
            cmp = n
            break
    if cmp is None:
        return None
    right = m["operand"] == 1
    other = cmp.left if right else cmp.comparators[0]
    if not (is_len_call(other) or is_int_const(other) is not None):
        return None
    t = type(cmp.ops[0])
    if t in (ast.Lt, ast.GtE):
        dup_up = right
    elif t in (ast.LtE, ast.Gt):
        dup_up = not right
    else:
        return None
    if (m["delta"] > 0) != dup_up:
        return None
    return by_const.get((src.span(cmp)[0], 0))


def in_ranges(line, ranges):
    return any(a <= line <= b for a, b in ranges)


def generate(req):
    out = {"files": []}
    k = 0
    for f in req["files"]:
        data = f["source"].encode("utf-8")
        res = {"path": f["path"], "mutants": [], "errors": [], "schema_ok": True}
        out["files"].append(res)
        try:
            tree = ast.parse(data, filename=f["path"])
        except (SyntaxError, ValueError) as e:
            res["errors"].append("%s does not parse, so it has no mutants: %s" % (f["path"], e))
            continue
        src = Source(data)
        g = Gen(src, tree)
        for s in tree.body:
            g.visit(s, [])
        ms = [m for m in g.out if in_ranges(m["hot"], f["ranges"])]
        prune(src, tree, f["path"], ms, whole=req.get("whole_parse", False))
        ign, errs = ignores(src, tree, f["path"])
        res["errors"].extend(errs)
        for m in ms:
            if "pruned" in m:
                continue
            reason = ign.get(m["hot"]) or ign.get(m["line"])
            if reason:
                m["ignored"] = reason
            else:
                k += 1
                m["k"] = k
        live = [m for m in ms if "k" in m]
        if live:
            try:
                schema_code(data, f["path"], live)
            except Exception as e:  # noqa: BLE001 -- any failure means: no schema
                res["schema_ok"] = False
                res["errors"].append("schema of %s: %s" % (f["path"], e))
        for m in ms:
            for x in ("cmp_start", "operand", "delta", "cmp_index", "to"):
                m.pop(x, None)
        res["mutants"] = ms
    return out


# ---------------------------------------------------------------- schemata


def schema_tree(data, path, mutants):
    """The module's AST with each mutant's expression behind a switch:
    (MUTANT if __bcode_sel__[0] == k else ORIGINAL), innermost first."""
    tree = ast.parse(data, filename=path)
    src = Source(data)
    by_span = {}
    for m in mutants:
        by_span.setdefault((m["start"], m["end"]), []).append(m)

    class Schema(ast.NodeTransformer):
        def visit(self, node):
            node = self.generic_visit(node)
            if not isinstance(node, ast.expr) or not hasattr(node, "end_col_offset"):
                return node
            ms = by_span.pop(src.span(node), None)
            if not ms:
                return node
            for m in ms:
                mut = ast.parse("(" + m["mutated"] + ")", mode="eval").body
                for n in ast.walk(mut):
                    if "lineno" in n._attributes:
                        ast.copy_location(n, node)
                test = ast.Compare(
                    left=ast.Subscript(value=ast.Name(id=SEL_NAME, ctx=ast.Load()), slice=ast.Constant(0), ctx=ast.Load()),
                    ops=[ast.Eq()], comparators=[ast.Constant(m["k"])])
                node = ast.IfExp(test=test, body=mut, orelse=node)
                for n in ast.walk(test):
                    ast.copy_location(n, node.orelse)
                ast.copy_location(node, node.orelse)
            return node

    tree = Schema().visit(tree)
    if by_span:
        raise ValueError("%d mutants found no expression to attach to" % len(by_span))
    return ast.fix_missing_locations(tree)


def schema_code(data, path, mutants):
    return compile(schema_tree(data, path, mutants), path, "exec", dont_inherit=True)


class Loader:
    """Compiles target modules bcode's way: from the schema (or one mutant's
    text), never from a cached .pyc, with __bcode_sel__ in their globals."""

    def __init__(self, targets, mode, single):
        self.targets = {}  # realpath -> target
        for t in targets:
            self.targets[os.path.realpath(t["abs"])] = t
        self.mode = mode
        self.single = single  # the mutant applied as text (fresh runs)

    def code(self, t, data):
        want = t.get("sha256")
        if want and hashlib.sha256(data).hexdigest() != want:
            raise ImportError("bcode: %s changed since its mutants were made" % t["rel"])
        if self.single is not None and self.single.get("path") == t["rel"]:
            return compile(apply_text(data, self.single), t["abs"], "exec", dont_inherit=True)
        if self.mode == "schema" and t.get("mutants"):
            return schema_code(data, t["abs"], t["mutants"])
        return compile(data, t["abs"], "exec", dont_inherit=True)

    def install(self):
        import importlib.machinery

        outer = self

        class SchemaLoader(importlib.machinery.SourceFileLoader):
            def get_code(self, fullname):
                return outer.code(outer.targets[os.path.realpath(self.path)], self.get_data(self.path))

            def exec_module(self, module):
                module.__dict__[SEL_NAME] = SEL
                super().exec_module(module)

        class Finder:
            @staticmethod
            def find_spec(name, path=None, target=None):
                spec = importlib.machinery.PathFinder.find_spec(name, path)
                if spec is None or not spec.origin or os.path.realpath(spec.origin) not in outer.targets:
                    return None
                spec.loader = SchemaLoader(name, spec.origin)
                return spec

            @staticmethod
            def invalidate_caches():
                pass

        sys.meta_path.insert(0, Finder)


# ---------------------------------------------------------------- runs


def strip_params(nodeid):
    i = nodeid.find("[")
    return nodeid if i < 0 else nodeid[:i]


def excerpt(rep):
    text = str(getattr(rep, "longreprtext", "") or "")
    lines = [ln.strip() for ln in text.splitlines() if ln.strip().startswith("E ")]
    if not lines:
        lines = [ln.strip() for ln in text.splitlines() if ln.strip()][-2:]
    return " | ".join(lines[:3])[:500]


class Baseline:
    """Runs every test once, in order, recording the target lines each
    executes (a settrace tracer that only traces frames of target files),
    its duration and its outcome."""

    def __init__(self, cfg, out):
        self.files = {os.path.realpath(t["abs"]): t["rel"] for t in cfg["targets"]}
        for t in cfg["targets"]:
            self.files[t["abs"]] = t["rel"]
        self.out = out

    def pytest_runtest_protocol(self, item, nextitem):
        import threading
        from _pytest.runner import runtestprotocol

        hits = set()
        files = self.files

        def local(frame, event, arg):
            if event == "line":
                hits.add((frame.f_code.co_filename, frame.f_lineno))
            return local

        def glob(frame, event, arg):
            fn = frame.f_code.co_filename
            if fn in files:
                hits.add((fn, frame.f_lineno))
                return local
            return None

        item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
        t0 = time.perf_counter()
        sys.settrace(glob)
        threading.settrace(glob)
        try:
            reports = runtestprotocol(item, nextitem=nextitem, log=True)
        finally:
            sys.settrace(None)
            threading.settrace(None)
        dur = time.perf_counter() - t0
        item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
        outcome = "passed"
        for r in reports:
            if r.failed:
                outcome = "failed"
                break
            if r.skipped:
                outcome = "skipped"
        lines = {}
        for fn, ln in hits:
            lines.setdefault(files[fn], set()).add(ln)
        rec = {"nodeid": item.nodeid, "file": str(item.location[0]), "outcome": outcome, "duration": dur,
               "lines": {k: sorted(v) for k, v in lines.items()}}
        self.out.write(json.dumps(rec) + "\n")
        self.out.flush()
        return True


SCALARS = (int, str, float, bool, bytes, type(None), complex, type(sys), type(len), type(Ellipsis))


# Class attributes Python caches on first use, derived from the class alone
# (copyreg's slot names, computed when an instance is first copied or
# pickled): a later run sees the value it would compute itself.
DERIVED_CLASS_KEYS = ("__slotnames__",)


def _sequences():
    import collections

    return (list, tuple, set, frozenset, collections.deque)


SEQUENCES = _sequences()


class StateGuard:
    """A fingerprint of the process state a mutant's run could leave behind
    and a later mutant's run could read: the globals of every module of the
    repository (targets, tests, conftest, helpers) one container and one
    object deep, the __dict__ of their classes, functions' defaults and
    lru_cache sizes, and the process-wide state (os.environ, cwd, sys.path,
    sys.modules, import hooks, threads, open descriptors, signal handlers,
    logging and warnings setup). Two equal fingerprints mean a later mutant
    starts from the state a fresh process would give it, as far as bcode can
    see; random's state is left out (a fresh process seeds it anew anyway)."""

    BIG = 2000  # containers longer than this are not walked into, only compared by identity

    def __init__(self, root, session):
        root = os.path.realpath(root)
        self.session = session
        self.mods = []
        for name, mod in list(sys.modules.items()):
            f = getattr(mod, "__file__", None)
            if not f or name == "__main__":
                continue
            rp = os.path.realpath(f)
            if rp == root or rp.startswith(root + os.sep):
                self.mods.append(mod)
        self.mod_names = set(m.__name__ for m in self.mods)
        self.root = root
        self.base = set(sys.modules)
        self.seen = {}  # id(module) -> under root
        self.fd_dir = "/proc/self/fd" if os.path.isdir("/proc/self/fd") else None

    def ours(self, mod):
        k = id(mod)
        if k not in self.seen:
            f = getattr(mod, "__file__", None)
            rp = os.path.realpath(f) if isinstance(f, str) else ""
            self.seen[k] = rp == self.root or rp.startswith(self.root + os.sep)
        return self.seen[k]

    def snapshot(self, own_fds=()):
        """The fingerprint: a list of (what, values), compared with ==.
        own_fds are descriptors the reference snapshot did not have (the
        child's end of its pipe to the parent, the worker's results file)."""
        import signal
        import threading

        out = []
        for mod in self.mods:
            d = vars(mod)
            keys, vals = tuple(dict.keys(d)), tuple(dict.values(d))
            per = [(id(mod), keys, tuple(map(id, vals)))]
            for k, v in zip(keys, vals):
                acc = []
                if k not in ("__loader__", "__spec__"):  # the import system's, compared by identity only
                    self.value(v, 1, acc)
                per.append(acc)
            out.append((mod.__name__, per))
        p = []
        add = p.append
        add(tuple(os.environ.items()))
        try:
            add(os.getcwd())
        except OSError as e:
            add(repr(e))
        add(tuple(sys.path))
        add(tuple(map(id, sys.meta_path)))
        add(tuple(map(id, sys.path_hooks)))
        # A module imported since the fork counts only if it is the
        # repository's own: a library imported lazily (pickle, by a test)
        # is what a fresh process's import would make of it too.
        add(tuple((name, id(m)) for name, m in list(sys.modules.items()) if name in self.base or self.ours(m)))
        out.append(("os.environ, cwd, sys.path, import hooks, sys.modules", p))
        p = [threading.active_count()]
        if self.fd_dir:
            p.append(len(set(os.listdir(self.fd_dir)) - {str(fd) for fd in own_fds}))
        out.append(("threads, open descriptors", p))
        p = []
        add = p.append
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGALRM, signal.SIGCHLD, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2):
            add(id(signal.getsignal(sig)))
        add(signal.getitimer(signal.ITIMER_REAL))
        add(sys.getrecursionlimit())
        add((id(sys.gettrace()), id(sys.getprofile()), id(sys.excepthook), id(sys.displayhook)))
        add((id(sys.stdin), id(sys.stdout), id(sys.stderr)))
        lg = sys.modules.get("logging")
        if lg is not None:
            add((tuple(map(id, lg.root.handlers)), lg.root.level, lg.root.disabled, len(lg.Logger.manager.loggerDict)))
        w = sys.modules.get("warnings")
        if w is not None:
            add(tuple(map(id, w.filters)))
        sock = sys.modules.get("socket")
        if sock is not None:
            add(sock.getdefaulttimeout())
        dec = sys.modules.get("decimal")
        if dec is not None:
            add(repr(dec.getcontext()))
        out.append(("signals, timers, trace hooks, std streams, logging, warnings, socket and decimal defaults", p))
        st = getattr(self.session, "_setupstate", None)
        out.append(("pytest's fixture stack", [len(getattr(st, "stack", ()) or ())]))
        return out

    @staticmethod
    def diff(ref, now):
        """Names the first part of the state that differs."""
        for (what, a), (_, b) in zip(ref, now):
            if a == b:
                continue
            if what in sys.modules and a[0] != b[0]:
                ka, kb = a[0][1], b[0][1]
                if ka != kb:
                    return "%s: globals %s" % (what, ", ".join(sorted(set(ka) ^ set(kb))[:5]) or "reordered")
                return "%s: %s rebound" % (what, ", ".join(k for k, x, y in zip(ka, a[0][2], b[0][2]) if x != y)[:200])
            if what in sys.modules:
                for k, x, y in zip(a[0][1], a[1:], b[1:]):
                    if x != y:
                        return "%s.%s" % (what, k)
            return what
        return "the set of guarded modules"

    def mapping(self, d, depth, acc):
        add = acc.append
        if isinstance(d, dict):
            keys, vals = tuple(dict.keys(d)), tuple(dict.values(d))
        else:  # a class's mappingproxy
            keys, vals = tuple(d.keys()), tuple(d.values())
        add(len(keys))
        add(tuple(map(id, keys)))
        add(tuple(map(id, vals)))
        if depth > 0 and len(vals) <= self.BIG:
            for v in vals:
                self.value(v, depth - 1, acc)

    def value(self, v, depth, acc):
        t = type(v)
        if t in SCALARS:
            return
        add = acc.append
        if isinstance(v, dict):
            self.mapping(v, depth, acc)
            return
        base = next((b for b in SEQUENCES if isinstance(v, b)), None)
        if base is not None:
            items = tuple(base.__iter__(v))  # the base's: a subclass may override __iter__
            add(len(items))
            add(tuple(map(id, items)))
            if len(items) <= self.BIG:
                if depth > 0:
                    for x in items:
                        self.value(x, depth - 1, acc)
        elif isinstance(v, type):
            if v.__module__ in self.mod_names:
                d = vars(v)
                skip = [k for k in DERIVED_CLASS_KEYS if k in d]
                if "tearDown_exceptions" in d and "unittest" in sys.modules and issubclass(v, sys.modules["unittest"].TestCase):
                    # unittest's doClassCleanups sets it anew before every
                    # use: written, never read across runs.
                    skip.append("tearDown_exceptions")
                if skip:
                    d = {k: x for k, x in d.items() if k not in skip}
                self.mapping(d, 1, acc)
        elif t.__name__ == "_lru_cache_wrapper":
            add(v.cache_info().currsize)
            self.value(getattr(v, "__wrapped__", None), depth, acc)
        elif t.__name__ == "function":
            add(id(v.__defaults__))
            if v.__defaults__:
                self.value(v.__defaults__, 1, acc)
            if v.__kwdefaults__:
                self.mapping(v.__kwdefaults__, 1, acc)
            if v.__dict__:
                self.mapping(v.__dict__, 1, acc)
        elif isinstance(v, (staticmethod, classmethod)):
            self.value(v.__func__, depth, acc)
        elif t.__module__ == "itertools":
            add(repr(v))  # count(n) and friends keep their state in C
        else:
            d = getattr(v, "__dict__", None)
            if type(d) is dict:
                lg = sys.modules.get("logging")
                if lg is not None and isinstance(v, lg.Logger) and "_cache" in d:
                    # isEnabledFor's memo of the levels, cleared whenever a
                    # level changes: derived, and the levels are compared.
                    d = {k: x for k, x in d.items() if k != "_cache"}
                self.mapping(d, depth, acc)


def wait_command(path, limit):
    """The next command bcode writes (atomically) to path, removed once read
    so that bcode can write the one after it; None after limit seconds."""
    end = time.monotonic() + limit
    # The poll starts fast (a command often comes within milliseconds of
    # what it answers) and backs off, so a session waiting long does not
    # take CPU from anything.
    pause = 0.002
    while True:
        try:
            with open(path) as f:
                cmd = json.load(f)
            os.unlink(path)
            return cmd
        except FileNotFoundError:
            pass
        if time.monotonic() > end:
            return None
        time.sleep(pause)
        pause = min(pause * 1.5, 0.025)


class Budget:
    """What a forked child may spend from now on: cpu seconds of its own CPU
    time, and wall seconds of waiting. Where the CPU time cannot be read,
    cpu is counted as wall time."""

    def __init__(self, pid, cpu, wall):
        self.pid, self.cpu, self.wall = pid, float(cpu), float(wall)
        self.t0 = time.perf_counter()
        self.cpu0 = cpu_seconds(pid)

    def over(self):
        """ "cpu" or "wall" when that budget is spent, else None."""
        waited = time.perf_counter() - self.t0
        if self.cpu0 is None:
            return "cpu" if waited >= self.cpu else None
        used = cpu_seconds(self.pid)
        if used is not None and used - self.cpu0 >= self.cpu:
            return "cpu"
        return "wall" if waited >= self.wall else None

    def wait(self):
        """How long to wait for the child before looking again."""
        left = (self.cpu if self.cpu0 is None else self.wall) - (time.perf_counter() - self.t0)
        return max(min(left, CPU_POLL), 0.0)


class Schemata:
    """Runs the jobs (a mutant and its covering tests each) in forked
    children with the switch set to the mutant. Collection happened once, in
    the session this process was forked from (Session). Isolation "state" (the default) runs a batch of mutants one
    after another in one child, so the copy-on-write cost of a fork is paid
    once per batch, and ends the child as soon as a mutant's run leaves the
    guarded state (StateGuard) different from what the fork started with:
    the next mutant then starts in a new child, from the collected state, as
    it would with a fork of its own. Isolation "fork" forks once per mutant.
    The parent enforces each mutant's budget: the child reports every
    mutant's start and result on a pipe, and the parent reads the child's
    CPU time (cpu_seconds) as it waits; when a mutant has used its "cpu"
    seconds, or waited its "timeout" seconds of wall time, or the child
    crashed, the child is gone, that mutant alone gets the verdict, and the
    rest of the batch continues in a new child."""

    def __init__(self, cfg, out, guard):
        self.jobs = cfg.get("jobs") or []
        self.guard = guard  # (StateGuard, reference snapshot) or the reason there is none
        self.preferred = set(cfg.get("preferred") or [])
        self.isolation = cfg.get("isolation") or "state"
        self.root = cfg["root"]
        self.out = out
        self.forks = 0
        self.restarts = []  # why a child ended early, one per early end

    def run_jobs(self, session):
        """Runs every job on the collected session; its own state is left as
        collection made it (the children run the tests)."""
        import gc

        items = {it.nodeid: it for it in session.items}
        order = {it.nodeid: i for i, it in enumerate(session.items)}
        todo = []
        for job in self.jobs:
            tests = sorted([t for t in job["tests"] if t in items], key=order.get)
            missing = [t for t in job["tests"] if t not in items]
            if missing and not tests:
                self.write({"k": job["k"], "verdict": "error", "detail": "pytest did not collect " + ", ".join(missing[:3])})
                continue
            todo.append((job, [items[t] for t in tests]))
        guard, ref = None, None
        if self.isolation != "fork":
            if isinstance(self.guard, tuple):
                guard, ref = self.guard
            else:
                self.restarts.append("no state check (%s): a child per mutant" % (self.guard,))
        # Objects alive now stay out of the collector's reach, so children
        # do not copy the pages a collection would touch (the session froze
        # what collection made before forking this worker).
        gc.freeze()
        i = 0
        while i < len(todo):
            i = self.batch(todo, i, guard, ref)
        self.write({"k": 0, "forks": self.forks, "restarts": self.restarts[:20], "restart_count": len(self.restarts)})

    def batch(self, todo, i, guard, ref):
        """Runs todo[i:] in one child until it ends; returns the index of the
        first job without a record."""
        import select

        self.forks += 1
        t0 = time.perf_counter()
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            code = 0
            try:
                os.setpgid(0, 0)
                self.child_batch(todo, i, guard, ref, w)
            except BaseException as e:  # noqa: BLE001 -- reported, never a kill
                try:
                    os.write(w, (json.dumps({"verdict": "error", "detail": "bcode worker: %r" % (e,)}) + "\n").encode())
                except BaseException:  # noqa: BLE001
                    pass
                code = 3
            finally:
                os._exit(code)
        os.close(w)
        # Until the child says a mutant started, the budget is for the fork
        # itself and the state check between mutants, not for the tests.
        budget = Budget(pid, FORK_CPU, FORK_WALL)
        cur = None  # index of the running job
        started_any = False
        nxt = i
        buf = b""
        over = None  # what ran out: "cpu" or "wall"
        while True:
            over = budget.over()
            if over:
                break
            ready, _, _ = select.select([r], [], [], budget.wait())
            if not ready:
                continue
            b = os.read(r, 65536)
            if not b:
                break
            buf += b
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                try:
                    msg = json.loads(line)
                except ValueError:
                    continue
                now = time.perf_counter()
                if "start" in msg:
                    cur = msg["start"]
                    started_any = True
                    t0 = now
                    job = todo[cur][0]
                    budget = Budget(pid, job.get("cpu") or job["timeout"], job["timeout"])
                elif "dirty" in msg:
                    self.restarts.append(msg["dirty"])
                elif cur is not None and "verdict" in msg:
                    rec = {"k": todo[cur][0]["k"], "duration": now - t0}
                    rec.update(msg)
                    self.write(rec)
                    cur, nxt = None, cur + 1
                    budget = Budget(pid, FORK_CPU, FORK_WALL)
        os.close(r)
        timed_out = over is not None
        if timed_out:
            kill_group(pid)
        _, status = os.waitpid(pid, 0)
        if cur is None and timed_out and not started_any:
            cur = nxt  # the fork itself never got going: that job's budget is spent
        if cur is None:
            if nxt == i and not timed_out:
                # The child ended without starting anything: report it on
                # the job it owed, so the loop always moves on.
                self.write({"k": todo[i][0]["k"], "verdict": "crash", "duration": time.perf_counter() - t0,
                            "detail": "the test process died before the tests ran (%s)" % describe_status(status)})
                return i + 1
            return nxt
        rec = {"k": todo[cur][0]["k"], "duration": time.perf_counter() - t0}
        if over == "cpu":
            rec.update(verdict="timeout", detail="the covering tests used %.1fs of CPU time without finishing" % budget.cpu)
        elif over == "wall":
            rec.update(verdict="timeout", detail="the covering tests waited %.1fs without finishing (blocked, not working)" % budget.wall)
        else:
            rec.update(verdict="crash", detail="the test process died (%s)" % describe_status(status))
        self.write(rec)
        return cur + 1

    def child_batch(self, todo, i, guard, ref, w):
        def send(msg):
            os.write(w, (json.dumps(msg) + "\n").encode())

        for j in range(i, len(todo)):
            job, items = todo[j]
            send({"start": j})
            res = self.child(job["k"], items)
            send(res)
            if guard is None:
                return
            if j + 1 < len(todo):
                now = guard.snapshot(own_fds=(w, self.out.fileno()))
                if now != ref:
                    send({"dirty": "after mutant %d: %s" % (job["k"], guard.diff(ref, now))})
                    return

    def child(self, k, items):
        from _pytest.runner import runtestprotocol

        SEL[0] = k
        failfast = not self.preferred
        killer, detail = None, ""
        last = None
        for i, it in enumerate(items):
            nxt = items[i + 1] if i + 1 < len(items) else None
            reports = runtestprotocol(it, nextitem=nxt, log=False)
            last = it
            bad = [r for r in reports if r.failed]
            if bad:
                if killer is None or (strip_params(it.nodeid) in self.preferred and strip_params(killer) not in self.preferred):
                    killer, detail = it.nodeid, excerpt(bad[0])
                if failfast:
                    break
        SEL[0] = 0
        if last is not None and last is not items[-1]:
            # Stopped early: tear the fixtures down as the session's end
            # would, so the next mutant sets them up anew. A teardown that
            # fails leaves the setup stack non-empty, and the guard sees it.
            try:
                last.session._setupstate.teardown_exact(None)
            except Exception:  # noqa: BLE001 -- the guard decides
                pass
        if killer is None:
            return {"verdict": "survived"}
        return {"verdict": "killed", "killed_by": killer, "detail": detail}

    def write(self, rec):
        self.out.write(json.dumps(rec) + "\n")
        self.out.flush()


class Fresh:
    """One mutant, applied as text, in a fresh process: the covering tests
    run the ordinary way (the honest baseline, and import-time mutants)."""

    def __init__(self, cfg, out):
        self.k = cfg["single"]["k"]
        self.preferred = set(cfg.get("preferred") or [])
        self.out = out
        self.killer, self.detail = None, ""

    def pytest_runtest_logreport(self, report):
        if report.failed:
            nid = report.nodeid
            if self.killer is None or (strip_params(nid) in self.preferred and strip_params(self.killer) not in self.preferred):
                self.killer, self.detail = nid, excerpt(report)

    def pytest_sessionfinish(self, session, exitstatus):
        rec = {"k": self.k, "verdict": "survived"}
        if self.killer is not None:
            rec.update(verdict="killed", killed_by=self.killer, detail=self.detail)
        elif session.testsfailed or exitstatus not in (0, 5):
            rec.update(verdict="error", detail="pytest exited %s" % exitstatus)
        self.out.write(json.dumps(rec) + "\n")
        self.out.flush()


class Session:
    """The one interpreter of a run (mode "session"): it has generated the
    mutants and installed the schema's import hook; pytest has collected
    the whole suite once. Every run forks off that collected state, so each
    starts from a state no test has touched: the baseline (every test under
    the line tracer, as its own child, with a deadline), then, once bcode
    has read the baseline and written the jobs, one process per shard of
    mutants (a worker: Schemata, which forks its batches in turn). bcode
    speaks through cfg["control"] (wait_command): {"baseline": seconds}
    runs the baseline (again, after a timeout), {"shards": [...]} runs the
    workers and ends the session."""

    def __init__(self, cfg, targets, t0):
        self.cfg = cfg
        self.targets = targets
        self.t0 = t0
        self.guard = None  # prepare_guard's answer

    def prepare_guard(self, session):
        """The workers' StateGuard and its reference snapshot of the
        collected state, made once here (while the baseline's child runs
        when there is one) rather than in every worker: each worker then
        inherits them, and pays neither the guard's realpath of every
        module nor the copy-on-write of the pages a snapshot touches. The
        workers' results files are not open yet: their children leave
        them out of their own snapshots."""
        if self.guard is not None or self.cfg.get("isolation") == "fork":
            return
        try:
            guard = StateGuard(self.cfg["root"], session)
            self.guard = (guard, guard.snapshot())
        except Exception as e:  # noqa: BLE001 -- then a child per mutant
            self.guard = repr(e)

    def pytest_runtestloop(self, session):
        if session.testsfailed and not session.config.option.continue_on_collection_errors:
            # As pytest's own loop: a suite that does not collect has no baseline.
            raise session.Interrupted("%d error%s during collection" % (session.testsfailed, "s" if session.testsfailed != 1 else ""))
        setup = time.perf_counter() - self.t0
        cmd = {"baseline": self.cfg["baseline_timeout"]} if self.cfg.get("baseline") else None
        while True:
            if cmd is None:
                cmd = wait_command(self.cfg["control"], self.cfg["wait"])
            if cmd is None or "baseline" not in cmd:
                break
            self.baseline(session, float(cmd["baseline"]), setup)
            cmd = None
        self.workers(session, (cmd or {}).get("shards") or [])
        return True

    def baseline(self, session, limit, setup):
        """Forks the baseline run and writes its records to cfg["baseline_out"]
        (atomically), after a first line that says how it ended."""
        path = self.cfg["baseline_out"]
        part = path + ".part"
        flush_std()
        t0 = time.perf_counter()
        pid = os.fork()
        if pid == 0:
            code = 3
            try:
                os.setpgid(0, 0)
                with open(part, "w", buffering=1) as out:
                    session.config.pluginmanager.register(Baseline({"targets": self.targets}, out), "bcode-baseline")
                    from _pytest.main import pytest_runtestloop

                    pytest_runtestloop(session)
                code = 0
            except BaseException as e:  # noqa: BLE001 -- reported by the parent as the run's end
                try:
                    sys.stderr.write("bcode baseline: %r\n" % (e,))
                    sys.stderr.flush()
                except BaseException:  # noqa: BLE001
                    pass
            finally:
                os._exit(code)
        self.prepare_guard(session)
        status, timed_out = wait_child(pid, limit)
        head = {"status": "ok", "exit": 0 if session.items else 5, "setup": setup, "wall": time.perf_counter() - t0}
        if timed_out:
            head.update(status="timeout")
        elif not (os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0):
            head.update(status="died", detail="the baseline run ended with %s" % describe_status(status))
        data = ""
        try:
            with open(part) as f:
                data = f.read()
            os.unlink(part)
        except FileNotFoundError:
            pass
        write_atomic(path, json.dumps(head) + "\n" + data)

    def workers(self, session, shards):
        """One forked worker per shard, each from the collected state, side
        by side; returns when all have ended."""
        import gc

        if shards:
            self.prepare_guard(session)
        # What collection made stays out of the collector's reach, so no
        # worker copies the pages a collection would touch.
        gc.freeze()
        flush_std()
        pids = []
        for sh in shards:
            pid = os.fork()
            if pid == 0:
                code = 3
                try:
                    with open(sh["results"], "a", buffering=1) as out:
                        cfg = {"jobs": sh["jobs"], "preferred": self.cfg.get("preferred"),
                               "isolation": self.cfg.get("isolation"), "root": self.cfg["root"]}
                        Schemata(cfg, out, self.guard).run_jobs(session)
                    code = 0
                except BaseException as e:  # noqa: BLE001 -- its mutants get no verdict, which bcode reports
                    try:
                        sys.stderr.write("bcode worker: %r\n" % (e,))
                        sys.stderr.flush()
                    except BaseException:  # noqa: BLE001
                        pass
                finally:
                    os._exit(code)
            pids.append(pid)
        for pid in pids:
            os.waitpid(pid, 0)


def flush_std():
    """Flushes the standard streams before a fork, so what the parent has
    buffered is written once, not again by every child."""
    for s in (sys.stdout, sys.stderr):
        try:
            s.flush()
        except (OSError, ValueError, AttributeError):
            pass


def kill_group(pid):
    """Kills pid's process group (a child that leaves its own group behind
    is killed alone), so a run's own subprocesses end with it."""
    import signal

    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def wait_child(pid, limit):
    """Waits for pid, at most limit seconds (0: no limit); a child still
    running then is killed with its process group. Returns its status and
    whether it was killed for the time."""
    end = time.monotonic() + limit if limit > 0 else None
    pause = 0.001
    while True:
        got, status = os.waitpid(pid, os.WNOHANG)
        if got:
            return status, False
        if end is not None and time.monotonic() > end:
            kill_group(pid)
            _, status = os.waitpid(pid, 0)
            return status, True
        time.sleep(pause)
        pause = min(pause * 1.5, 0.01)


def write_atomic(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def describe_status(status):
    if os.WIFSIGNALED(status):
        return "signal %d" % os.WTERMSIG(status)
    if os.WIFEXITED(status):
        return "exit status %d" % os.WEXITSTATUS(status)
    return "status %d" % status


def pytest_boot():
    """The gate's bootstrap (bcode_pytest_boot.py, written beside this
    script): one rule for importing pytest before any snapshot path and
    for where the snapshot's paths go."""
    import importlib.util

    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bcode_pytest_boot.py")
    spec = importlib.util.spec_from_file_location("bcode_pytest_boot", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def run(cfg_path):
    t0 = time.perf_counter()
    with open(cfg_path) as f:
        cfg = json.load(f)
    sys.dont_write_bytecode = True
    mode = cfg["mode"]
    gen = start_generator(cfg) if mode == "session" else None
    # pytest and its plugins from the system, before any snapshot path;
    # then the snapshot's paths after the standard library, so a root
    # json.py or unittest.py of the tree is not the standard library's.
    boot = pytest_boot()
    boot._load_system()
    if gen is not None:
        targets = session_targets(cfg, gen)
        if targets is None:
            return 0  # no mutant to run: nothing to collect
        single = None
    else:
        targets, single = cfg["targets"], cfg.get("single")
    std = boot._standard_dirs()
    at = 0
    while at < len(sys.path) and boot._is_standard(sys.path[at], std):
        at += 1
    sys.path[at:at] = cfg["paths"]
    Loader(targets, "schema" if mode == "session" else mode, single).install()
    import pytest

    out = None
    if mode == "session":
        plugin = Session(cfg, targets, t0)
    else:
        out = open(cfg["results"], "a", buffering=1)
        plugin = Fresh(cfg, out)
    # --tb=line: a killed mutant needs one line of why, and formatting a
    # long traceback costs more than many a test.
    args = ["-p", "no:cacheprovider", "-q", "--tb=line", "--rootdir=" + cfg["root"], "-o", "console_output_style=classic"]
    if mode == "fresh" and not cfg.get("preferred"):
        args.append("-x")
    args.append("--")
    args.extend(cfg.get("args") or [])
    code = pytest.main(args, plugins=[plugin])
    if out is not None:
        out.close()
    return int(code) if mode == "session" else 0


def start_generator(cfg):
    """Forks the generator of cfg["request"]'s mutants, which writes them
    (atomically) to cfg["gen_out"] for bcode to read while the session goes
    on: it parses and compiles while the session imports pytest, on a
    second CPU when there is one. Returns its pid."""
    flush_std()
    pid = os.fork()
    if pid == 0:
        code = 3
        try:
            write_atomic(cfg["gen_out"], json.dumps(generate(cfg["request"])))
            code = 0
        except BaseException as e:  # noqa: BLE001 -- bcode reports the missing answer with this
            try:
                sys.stderr.write("bcode generator: %r\n" % (e,))
                sys.stderr.flush()
            except BaseException:  # noqa: BLE001
                pass
        finally:
            os._exit(code)
    return pid


def session_targets(cfg, gen):
    """The targets with their schema mutants, once the generator (pid gen)
    has answered (none when cfg["schema"] is false: every mutant then runs
    in a fresh process); None when no mutant is left to run. A generator
    that failed ends the session (SystemExit)."""
    _, status = os.waitpid(gen, 0)
    if not (os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0):
        raise SystemExit(3)
    with open(cfg["gen_out"]) as f:
        files = json.load(f)["files"]
    targets, live = [], False
    for t, gf in zip(cfg["targets"], files):
        ks = [m for m in gf["mutants"] if "k" in m]
        live = live or bool(ks)
        t = dict(t)
        if cfg.get("schema") and gf["schema_ok"] and ks:
            t["mutants"] = ks
        targets.append(t)
    return targets if live else None


def main():
    if len(sys.argv) < 2:
        sys.stderr.write(__doc__)
        return 2
    if sys.argv[1] == "gen":
        req = json.load(sys.stdin)
        json.dump(generate(req), sys.stdout)
        return 0
    if sys.argv[1] == "run":
        return run(sys.argv[2])
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main())
