"""tests/warm_python.py answers as ``subprocess.run`` of a fresh Python would: the same output, errors and
exit status for the same code, folder and environment."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.warm_python import run_python

PROBE = """
import os, sys
status = os.environ.get(sys.argv[0].rsplit("/", 1)[-1].removesuffix(".py").upper())  # PROBE: no setting
print(sys.argv, os.getcwd(), status, __name__, sys.path[0] == os.path.dirname(sys.argv[0]))
print(sorted(m for m in sys.modules if m == "vizhooks" or m.startswith("vizhooks.")))
print("to stderr", file=sys.stderr)
raise SystemExit(int(status))
"""


def test_a_file_runs_as_in_a_fresh_python(tmp_path):
    script = tmp_path / "probe.py"
    script.write_text(PROBE)
    env = {**os.environ, "PROBE": "3"}
    want = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True)
    got = run_python(path=script, cwd=tmp_path, env=env)
    assert (got.returncode, got.stdout, got.stderr) == (want.returncode, want.stdout, want.stderr) == (
        3, f"['{script}'] {tmp_path} 3 __main__ True\n[]\n", "to stderr\n")


def test_code_errors_and_timeouts(tmp_path):
    got = run_python("import sys; print(sys.argv, sys.path[0] == ''); 1 / 0", cwd=tmp_path)
    assert got.returncode == 1 and got.stdout == "['-c'] True\n" and "ZeroDivisionError" in got.stderr
    with pytest.raises(subprocess.TimeoutExpired):
        run_python("import time; time.sleep(30)", cwd=tmp_path, timeout=0.5)
    assert run_python("print('still here')", cwd=tmp_path).stdout == "still here\n"


def test_a_module_runs_as_with_dash_m(tmp_path):
    (tmp_path / "probe.py").write_text(PROBE)
    env = {**os.environ, "PROBE": "0"}
    want = subprocess.run([sys.executable, "-m", "probe", "x"], cwd=tmp_path, env=env, capture_output=True, text=True)
    got = run_python(module="probe", args=["x"], cwd=tmp_path, env=env)
    assert (got.returncode, got.stdout, got.stderr) == (want.returncode, want.stdout, want.stderr) == (
        0, f"['{tmp_path / 'probe.py'}', 'x'] {tmp_path} 0 __main__ True\n[]\n", "to stderr\n")
