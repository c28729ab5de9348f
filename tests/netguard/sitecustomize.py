"""Run at start-up by every Python whose PYTHONPATH holds this folder (tests/conftest.py puts it
there): install the network guard, then run the sitecustomize this file hides, if there is one
(Debian's python3 has its own)."""

import importlib.machinery
import importlib.util
import os
import sys

import vizhooks_netguard

vizhooks_netguard.install()


def _hidden():
    """The next sitecustomize on sys.path, run as Python would have run it; None if there is none."""
    here = os.path.normcase(vizhooks_netguard.GUARD_DIR)
    rest = [p for p in sys.path if os.path.normcase(os.path.abspath(p or os.curdir)) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


hidden = _hidden()  # kept, so whatever it set up stays alive
