"""How bcode starts pytest on a snapshot.

Run as `python -I -B -u -c <this> PLUGIN [-startup] PATH... -- ARG...`: an
isolated interpreter (no PYTHON* variables, no user site, neither the
working directory nor a script's directory on sys.path), so no file of the
snapshot runs at start-up: not its sitecustomize.py or usercustomize.py,
and not a module shadowing one that site or pytest imports. This then

- imports pytest, its built-in plugins, the installed plugins (pytest11
  entry points) and bcode's plugin (the file PLUGIN) while sys.path holds
  only the interpreter's own directories, so that none of them, nor a
  module they import, can come from the snapshot;
- puts the snapshot's PATHs after the standard library and before
  site-packages: the snapshot's code wins over an installed copy of the
  project (an editable install of the user's checkout), and never over the
  standard library or pytest's own modules;
- with -startup (the base's `[python] startup_files = true`), runs the
  snapshot's sitecustomize and usercustomize as site would have;
- runs pytest on ARGs as `python -m pytest` does.

pytest itself later puts test directories first on sys.path (its default
import mode "prepend"): from then on a module the tests import first can
come from the snapshot, as under plain pytest. The standard library and
pytest's modules are loaded by then.
"""

import importlib
import importlib.util
import os
import sys
import sysconfig


def _standard_dirs():
    """The interpreter's standard library entries of sys.path."""
    out = set()
    for key in ("stdlib", "platstdlib"):
        p = sysconfig.get_path(key)
        if p:
            out.add(os.path.realpath(p))
    return out


def _is_standard(entry, std):
    if not entry:
        return False
    real = os.path.realpath(entry)
    if real in std:
        return True
    if os.path.basename(real) == "lib-dynload" and os.path.dirname(real) in std:
        return True
    base = os.path.basename(entry)  # the zipped standard library: python311.zip
    return base.startswith("python") and base.endswith(".zip")


def _load_system():
    import pytest  # noqa: F401 - the system's, before any snapshot path

    from _pytest import config

    for name in config.essential_plugins + config.default_plugins:
        try:
            importlib.import_module("_pytest." + name)
        except Exception:  # noqa: BLE001 - pytest reports it itself
            pass
    try:
        from importlib.metadata import entry_points

        try:
            eps = entry_points(group="pytest11")
        except TypeError:  # Python < 3.10
            eps = entry_points().get("pytest11", [])
        for ep in eps:
            try:
                importlib.import_module(ep.value.split(":")[0].strip())
            except Exception:  # noqa: BLE001 - pytest reports it itself
                pass
    except Exception:  # noqa: BLE001
        pass


def _load_plugin(path):
    spec = importlib.util.spec_from_file_location("bcode_pytest_log", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["bcode_pytest_log"] = mod
    spec.loader.exec_module(mod)


def _run_startup_files(paths):
    from importlib.machinery import PathFinder

    for name in ("sitecustomize", "usercustomize"):
        spec = PathFinder.find_spec(name, paths)
        if spec is None or spec.loader is None:
            continue
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)


def main():
    args = sys.argv[1:]
    end = args.index("--")
    plugin, paths, pytest_args = args[0], args[1:end], args[end + 1 :]
    startup = bool(paths) and paths[0] == "-startup"
    if startup:
        paths = paths[1:]
    # An older interpreter's -c may put the working directory first.
    sys.path[:] = [p for p in sys.path if p]
    _load_system()
    _load_plugin(plugin)
    std = _standard_dirs()
    at = 0
    while at < len(sys.path) and _is_standard(sys.path[at], std):
        at += 1
    sys.path[at:at] = paths
    if startup:
        _run_startup_files(paths)
    import pytest

    sys.argv = [os.path.join(os.path.dirname(pytest.__file__), "__main__.py")] + pytest_args
    if hasattr(pytest, "console_main"):
        raise SystemExit(pytest.console_main())
    raise SystemExit(pytest.main(pytest_args))


# Mutation evidence (verify/mutate/python's pymutate.py) imports this file
# for the same rule: its _load_system, _standard_dirs and _is_standard.
if __name__ == "__main__":
    main()
