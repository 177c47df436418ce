"""bcode writes this file as sitecustomize.py and usercustomize.py into the
directory it puts first on PYTHONPATH for the processes a test starts.

site imports the first sitecustomize (and usercustomize) on sys.path, and
PYTHONPATH comes before the interpreter's own directories: without this
one, a snapshot's start-up file (later on PYTHONPATH) would run in every
Python process a test starts. This one runs instead the interpreter's own,
the one found outside PYTHONPATH, if there is one.
"""


def _chain(name):
    import importlib.util
    import os
    import sys
    from importlib.machinery import PathFinder

    env = set(p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p)
    env |= set(os.path.realpath(p) for p in env)
    rest = [p for p in sys.path if p and p not in env and os.path.realpath(p) not in env]
    spec = PathFinder.find_spec(name, rest)
    if spec is None or spec.loader is None:
        return
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)


_chain(__name__)
