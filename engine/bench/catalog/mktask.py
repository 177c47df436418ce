#!/usr/bin/env python3
"""Writes the catalog's tasks that come from the real corpus
(engine/check/testdata/real): everyday.toml, polyglot.toml,
verification.toml and, for tasks-suite entries, fixtures/<id>.txtar.

    python3 engine/bench/catalog/mktask.py          # from the module root

A tasks entry is a real fix commit turned into a request: base/ is the
case's base (the commit's parent, trimmed as the case trims it),
reference/ the commit's non-test files, hidden/ the commit's test files,
the checks the tests that fail on the base and pass on the commit (the
case's evidence: lines), the goal the commit's subject as a request. A
Rust source file holding its tests (#[cfg(test)] modules) is in hidden/
whole, and the grader splices only its test modules (docs/evaluation.md);
its reference/ version is the commit's code with the base's test modules.

Provenance dates are the commits' dates, read once from the projects'
histories (`git log -1 --format=%cs COMMIT` in a clone) and kept in DATES;
a variant is synthetic, dated the day its case file was added here.
"""

import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REAL = os.path.join(HERE, "..", "..", "check", "testdata", "real")
sys.path.insert(0, REAL)
import mkcase  # noqa: E402  (the real corpus's tool: txtar, test files, the Rust splice)

# The commits' dates, from the projects' own histories.
DATES = {
    "250569f9f90f43040dd5c85e28db93ace798f6d9": "2016-01-19",
    "c1c25da365cf14878cf5317147e7a09b5d124df5": "2026-08-06",
    "f1034b07ddf71f4d9285134a47a4ade16fe40789": "2026-08-06",
    "2064d2b8b5e33b3e5d175b3d9c5b90ba7b212665": "2016-11-30",
    "bb3d318650d48840a39aa21a027c6630e198e626": "2017-11-10",
    "402bd47cf34e515e11d0dd8d04279a6b4ff04bc2": "2025-06-30",
    "462e867950883c8ffbcfff715efd767b20c6c749": "2019-05-20",
    "4a521f877596fbd22abad0f9a021c879aa97f900": "2017-09-12",
    "edc56495e150df241791bf5db02b83f66000686a": "2021-07-09",
    "6bc1c1d05a509cf222cef8ae1bfc2c2bf2b8e42a": "2023-02-25",
    "63cde0dfe2481856bcfc2184477b26df770f19d7": "2023-04-18",
    "afb0663e9d0a2d6917d6cf213302811276af70cd": "2017-08-07",
    "48646c6c429b1fff5d274cc19224631b437031c9": "2017-11-25",
    "78501e1ac1747725861b3a0b325b8ca5c1f40f20": "2018-01-13",
    "fcf9f7f78f30bebd62bacb6270d5ccfe6f71ac4b": "2018-05-04",
    "04806aa452eb84d72a63858d8c4baa2abb68c41c": "2018-07-05",
    "3dfff3d4339e205651e99cab4ad8e193c07eaf83": "2016-08-23",
    "14cf91e0ef0bb4a0c2aebaeeee691ba70d28a7e5": "2016-04-18",
    "fbe76cfa08cd0fa2695a1e8feea4687221ed2b32": "2018-03-16",
    "f9013f1433a7c996784bfe8f93a70fc84690cc16": "2016-05-09",
    "96e1d5eef4ca67f3719d511ffefc2627c3f5f029": "2018-07-14",
    "a2b2b32373ff0b1a312b7fdf6d38a977099698a6": "2024-01-11",
    "9dda91f99b2adc5aec772bae24908dbb31fdb130": "2021-12-21",
    "032dc0d107fedd4ce7921c1a494a76a2910f49ff": "2026-03-05",
    "91300b156f3c6aeeaac8bfa1ff51f2f634c33a9b": "2018-07-18",
    "dc380bb2e12bc3bb338b1089c851556902f183a1": "2019-08-29",
    "f1b17e8202e84e45fcb8cf0b68b49acb2bd7cb16": "2019-12-13",
    "b893fc2bdd52fdd227a8cec3b7a26574de813e67": "2017-03-09",
    "605c81c9b9dfaeb8c26c92129fbd5d0f567e0fb8": "2019-12-12",
    "1e61524a798ea73632029a013a7686036d5c126f": "2026-07-17",
}

# (group, split, case, capability, goal)
TASKS = [
    ("everyday", "dev", "goversion-large-input-panic", "fix a panic on out-of-range input",
     "NewConstraint panics when a version number in the constraint is too large for an int64. Make it return an error instead of panicking."),
    ("everyday", "dev", "boltons-bits-length", "fix an off-by-one in a bounds check",
     "Bits accepts a value that needs one bit more than the length it is given. Fix the length check in boltons.mathutils.Bits so such a value raises ValueError."),
    ("everyday", "heldout", "boltons-jsonl-eof", "fix a loop that never terminates",
     "JSONLIterator never terminates when it reaches the end of the file in the middle of the last line, and rel_seek with a negative value loops forever. Fix both in boltons.jsonutils."),
    ("everyday", "dev", "humanize-customreltime-panic", "fix an index out of range",
     "CustomRelTime panics with an index out of range when the magnitude list does not cover the time difference. Make it handle an incomplete magnitude list without panicking."),
    ("everyday", "dev", "humanize-reltime-off-by-one", "fix an off-by-one at a boundary",
     "RelTime has an off-by-one at the magnitude boundaries: a difference of exactly one week says \"7 days ago\" instead of \"1 week ago\". Fix the boundary comparison."),
    ("everyday", "heldout", "humanize-bigcomma-mutation", "fix a function that mutates its argument",
     "BigComma changes the *big.Int it is given (the caller's value ends up divided). Make it leave its argument unchanged."),
    ("everyday", "dev", "cachetools-key-pickle", "fix serialization of a cached value",
     "Cache keys made by cachetools.keys lose their cached hash when pickled and unpickled. Make keys survive a pickle round trip with the right hash."),
    ("everyday", "dev", "jmespath-null-type-name", "fix a wrong type mapping",
     "A custom function declared to take null raises JMESPathTypeError when passed null, because the reverse type table maps null to None instead of NoneType. Fix the mapping."),
    ("everyday", "heldout", "mapstructure-compose-no-funcs", "fix a panic on an empty argument list",
     "ComposeDecodeHookFunc() called with no functions panics when the composed hook runs. Make it pass the data through unchanged."),
    ("everyday", "dev", "pathspec-gitignore-issue74", "fix pattern priority in a matcher",
     "GitIgnoreSpec lets a file pattern of equal priority override an include pattern that matched a directory (issue 74): a file under an included directory is wrongly excluded. Fix the priority rule."),
    ("everyday", "dev", "mapstructure-textunmarshaller-panic", "fix a panic on an unexpected type",
     "TextUnmarshallerHookFunc panics when the input is not a string. Make the hook handle non-string inputs without panicking."),
    ("polyglot", "dev", "demangle-osx", "fix a parser for a platform variant (Rust)",
     "Symbols mangled on macOS carry an extra leading underscore (__ZN...E) and are not demangled. Demangle them."),
    ("polyglot", "dev", "demangle-thinlto", "handle a suffix in a parser (Rust)",
     "Symbols generated by ThinLTO end in a .llvm.<hex> suffix and are not demangled. Demangle them, dropping the suffix."),
    ("polyglot", "heldout", "demangle-fuzz-panics", "fix panics found by fuzzing (Rust)",
     "demangle panics on some inputs found by fuzzing (non-ASCII bytes, lengths that overflow). Make it reject such input without panicking."),
    ("polyglot", "dev", "demangle-dot-suffix", "extend a parser to a new form (Rust)",
     "Symbols with LLVM IR's dot-delimited words after the final E (for example .exit.i.i) are not demangled. Demangle them and keep the suffix in the output."),
    ("polyglot", "heldout", "demangle-display-invalid", "fix what Display prints for invalid input (Rust)",
     "Displaying a symbol that is not a valid mangled name prints a chopped inner part of it. Print the original string unchanged instead."),
    ("polyglot", "dev", "strsim-jaro-panic", "fix an arithmetic overflow (Rust)",
     "jaro and jaro_winkler panic with an arithmetic overflow on one-character strings. Make them return the right similarity instead."),
    ("polyglot", "dev", "strsim-multibyte", "fix length handling for multibyte text (Rust)",
     "hamming, levenshtein, damerau_levenshtein and jaro compare byte lengths and give wrong results on strings with multibyte characters. Make them count characters."),
]

# (split, case, capability): verify-suite entries, graded by the case's label.
VERIFY = [
    ("dev", "goversion-prerelease-constraints", "a real fix is verified"),
    ("dev", "humanize-si-negative", "a real fix is verified"),
    ("heldout", "goversion-regexp-anchor", "a real fix is verified"),
    ("dev", "uuid-v7-monotonic", "a real change that drops a test is tampered"),
    ("heldout", "cachetools-method-key-self", "a real change that rewrites an old test is tampered"),
    ("heldout", "tabulate-wrap-wide-char", "a real change whose test passes on the base is green"),
    ("dev", "demangle-mangled-equals", "a real Rust fix is verified"),
    ("dev", "goversion-prerelease-fix-dropped", "a new test with the fix dropped fails"),
    ("dev", "humanize-hide-args-skip", "a test hidden by a skip on its arguments is tampered"),
    ("dev", "goversion-hide-testmain-exit0", "a TestMain that exits 0 after a failure is tampered"),
    ("dev", "semver-lte-test-weakened", "a test weakened to pass on the base is green"),
    ("heldout", "humanize-correct-init-table", "a correct change with an init-time table is verified"),
    ("dev", "jmespath-correct-new-module", "a correct change with a new test module is verified"),
    ("dev", "strsim-jaro-length-one-fix-dropped", "a Rust test with the fix dropped fails"),
    ("heldout", "boltons-hide-module-test-false", "a Python module hidden by __test__ = False is tampered"),
]


def is_test(path):
    return mkcase.is_test_file(path)


def rust_inline(path, files):
    """Whether path is a Rust source file outside tests/ holding test modules."""
    return path.endswith(".rs") and not is_test(path) and mkcase.rust_test_modules(files[path]) not in (None, [])


def sections(base, head):
    reference, hidden = {}, {}
    for path, data in head.items():
        if rust_inline(path, head):
            hidden[path] = data
            code = mkcase.rust_splice(data, base[path]) if path in base else data
            if code is None:
                raise SystemExit(f"{path}: test modules unreadable")
            if code != base.get(path):
                reference[path] = code
        elif is_test(path):
            hidden[path] = data
        else:
            reference[path] = data
    return reference, hidden


def checks(header, base, head, language):
    out = []
    for line in mkcase.header_get(header, "evidence"):
        if not line.startswith("fail-to-pass "):
            continue
        test = line[len("fail-to-pass "):].split(": base with", 1)[0]
        out.append(check_command(test, base, head, language))
    if not out:
        raise SystemExit("no fail-to-pass evidence")
    return out


def check_command(test, base, head, language):
    if language == "go":
        return f"go test . -run {test}"
    if language == "rust":
        root, name = test.split("::", 1)
        if root == "src/lib.rs":
            return f"cargo test --lib {name}"
        return f"cargo test --test {root[len('tests/'):-len('.rs')]} {name}"
    module, name = test.split("::", 1)
    parts = module.split(".")
    for i in range(len(parts), 0, -1):
        path = "/".join(parts[:i]) + ".py"
        if path in head or path in base:
            rest = parts[i:] + [name]
            return "python3 -m pytest " + "::".join([path] + rest)
    raise SystemExit(f"{test}: no test file for {module}")


def language(base):
    for ext, lang in ((".rs", "rust"), (".py", "python"), (".go", "go")):
        if any(p.endswith(ext) for p in base):
            return lang
    raise SystemExit("no language")


def toml_str(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def write_task(out, group, split, case, capability, goal):
    header, base, head = mkcase.resolve(os.path.join(REAL, case + ".txtar"))
    commit = mkcase.header_get(header, "commit")[0]
    source = mkcase.header_get(header, "source")[0]
    subject = mkcase.header_get(header, "subject")[0]
    lang = language(base)
    reference, hidden = sections(base, head)
    tid = f"{group}-{case}"
    files = {"base/" + k: v for k, v in sorted(base.items())}
    files.update({"reference/" + k: v for k, v in sorted(reference.items())})
    files.update({"hidden/" + k: v for k, v in sorted(hidden.items())})
    comment = (f"{tid}: {source} commit {commit} ({subject}), cut from\n"
               f"engine/check/testdata/real/{case}.txtar by engine/bench/catalog/mktask.py.\n")
    mkcase.write_txtar(os.path.join(HERE, "fixtures", tid + ".txtar"), comment, files)
    out.append("\n".join([
        "[[task]]", f"id = {toml_str(tid)}", 'suite = "tasks"', f"group = {toml_str(group)}",
        f"capability = {toml_str(capability)}", f"split = {toml_str(split)}", f"language = {toml_str(lang)}",
        f"pinned = {toml_str(commit)}", f"fixture = {toml_str(f'engine/bench/catalog/fixtures/{tid}.txtar')}",
        f"goal = {toml_str(goal)}",
        "checks = [" + ", ".join(toml_str(c) for c in checks(header, base, head, lang)) + "]",
        "[task.provenance]", 'kind = "commit"', f"source = {toml_str(source)}", f"ref = {toml_str(commit)}",
        f"date = {toml_str(DATES[commit])}", ""]))


def added_date(path):
    out = subprocess.run(["git", "log", "--diff-filter=A", "--format=%cs", "--", path],
                         capture_output=True, text=True, check=True).stdout.split()
    if not out:
        raise SystemExit(f"{path}: not committed")
    return out[-1]


def write_verify(out, split, case, capability):
    path = os.path.join(REAL, case + ".txtar")
    header, base, _ = mkcase.resolve(path)
    verdict = mkcase.header_get(header, "verdict")[0]
    frm = mkcase.header_get(header, "from")
    parent_header = mkcase.parse_txtar(os.path.join(REAL, frm[0] + ".txtar"))[0] if frm else header
    commit = mkcase.header_get(parent_header, "commit")[0]
    source = mkcase.header_get(parent_header, "source")[0]
    if frm:
        prov = ['kind = "synthetic"', f"source = {toml_str(source)}", f"ref = {toml_str(commit)}",
                f"date = {toml_str(added_date(path))}"]
    else:
        prov = ['kind = "commit"', f"source = {toml_str(source)}", f"ref = {toml_str(commit)}",
                f"date = {toml_str(DATES[commit])}"]
    out.append("\n".join([
        "[[task]]", f"id = {toml_str('verification-' + case)}", 'suite = "verify"', 'group = "verification"',
        f"capability = {toml_str(capability)}", f"split = {toml_str(split)}", f"language = {toml_str(language(base))}",
        f"pinned = {toml_str(commit)}", f"fixture = {toml_str(f'engine/check/testdata/real/{case}.txtar')}",
        f"label = {toml_str(verdict)}", "[task.provenance]"] + prov + [""]))


HEAD = "# Generated by engine/bench/catalog/mktask.py from the real corpus; edit the lists there and rerun.\n\n"


def main():
    os.makedirs(os.path.join(HERE, "fixtures"), exist_ok=True)
    for group in ("everyday", "polyglot"):
        out = []
        for g, split, case, capability, goal in TASKS:
            if g == group:
                write_task(out, g, split, case, capability, goal)
        open(os.path.join(HERE, group + ".toml"), "w").write(HEAD + "\n".join(out))
    out = []
    for split, case, capability in VERIFY:
        write_verify(out, split, case, capability)
    open(os.path.join(HERE, "verification.toml"), "w").write(HEAD + "\n".join(out))


if __name__ == "__main__":
    main()
