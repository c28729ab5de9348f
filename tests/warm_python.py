"""A fresh Python for a code snippet, without paying for ``import torch`` each time.

The snippet tests run code the page shows, as a reader would: in a Python of its own, with no
vizhooks. Starting that Python and importing torch and torchvision is about 3 s of CPU, most of what
a snippet costs. :func:`run_python` answers like ``subprocess.run([python, "-c", code])`` (or
``[python, path]``) with ``capture_output=True, text=True``, but the process is forked from a
server started once per test process that has imported only what every snippet imports first
(torch, torchvision, NumPy, Pillow; asserted: no vizhooks module) and computed nothing. The child
gets the working folder, the environment, ``sys.argv``, ``sys.path[0]`` and a new ``__main__``
module as the interpreter would give them, its own standard output and error, and its exit status.
"""

from __future__ import annotations

import atexit
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

SERVER = r'''
import json, os, runpy, sys, traceback, types
import numpy, PIL.Image, torch, torchvision  # what the snippets import first; nothing computed
assert not any(m == "vizhooks" or m.startswith("vizhooks.") for m in sys.modules)
reply = os.fdopen(os.dup(1), "w")  # the answers; fd 1 and 2 become each child's own files

def child(req):
    status = 0
    try:
        for fd, name in ((1, "stdout"), (2, "stderr")):
            os.dup2(os.open(req[name], os.O_WRONLY | os.O_CREAT | os.O_TRUNC), fd)
        os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
        os.chdir(req["cwd"])
        os.environ.clear()
        os.environ.update(req["env"])
        main = types.ModuleType("__main__")
        sys.modules["__main__"] = main
        if req["path"] is not None:
            sys.argv, sys.path[0] = [req["path"], *req["args"]], os.path.dirname(os.path.abspath(req["path"]))
            runpy.run_path(req["path"], run_name="__main__")
        elif req["module"] is not None:  # as -m: the folder on the path, argv[0] the module's file (runpy)
            sys.argv, sys.path[0] = ["-m", *req["args"]], os.getcwd()
            runpy.run_module(req["module"], run_name="__main__", alter_sys=True)
        else:
            sys.argv, sys.path[0] = ["-c", *req["args"]], ""
            exec(compile(req["code"], "<string>", "exec"), main.__dict__)
    except SystemExit as done:
        if done.code is None or isinstance(done.code, int):
            status = done.code or 0
        else:
            print(done.code, file=sys.stderr)
            status = 1
    except BaseException:
        traceback.print_exc()
        status = 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)

for line in sys.stdin:
    req = json.loads(line)
    reply.flush()
    pid = os.fork()
    if pid == 0:
        child(req)
    reply.write(json.dumps({"pid": pid}) + "\n")
    reply.flush()
    _, status = os.waitpid(pid, 0)
    reply.write(json.dumps({"status": os.waitstatus_to_exitcode(status)}) + "\n")
    reply.flush()
'''

_server: subprocess.Popen | None = None
_one_at_a_time = threading.Lock()  # one request, then its answers, on the server's pipes
_pending = b""  # what the server answered past the last line read


def _start() -> subprocess.Popen:
    global _server, _pending
    if _server is None or _server.poll() is not None:
        _server = subprocess.Popen([sys.executable, "-c", SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                   bufsize=0)
        _pending = b""
        atexit.register(_server.kill)
    return _server


def _read(server: subprocess.Popen, deadline: float | None) -> dict:
    """The server's next answer; TimeoutError past ``deadline`` (time.monotonic)."""
    global _pending
    while b"\n" not in _pending:
        wait = None if deadline is None else max(deadline - time.monotonic(), 0)
        if not select.select([server.stdout], [], [], wait)[0]:
            raise TimeoutError
        chunk = os.read(server.stdout.fileno(), 65536)
        if not chunk:
            raise RuntimeError(f"the warm Python ended (status {server.wait()})")
        _pending += chunk
    line, _pending = _pending.split(b"\n", 1)
    return json.loads(line)


def run_python(code: str | None = None, *, path: str | Path | None = None, module: str | None = None,
               args: tuple[str, ...] | list[str] = (), cwd: str | Path, env: dict[str, str] | None = None,
               timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """``subprocess.run([sys.executable, "-c", code, *args])`` (or ``[sys.executable, path, *args]``, or
    ``[sys.executable, "-m", module, *args]``) with ``cwd=cwd, env=env, capture_output=True, text=True,
    timeout=timeout``, forked from the warm server (module doc)."""
    if sum(x is not None for x in (code, path, module)) != 1:
        raise ValueError("give code, a path or a module")
    how = [str(path)] if path is not None else ["-m", str(module)] if module is not None else ["-c", str(code)]
    command = [sys.executable, *how, *map(str, args)]
    with _one_at_a_time, tempfile.TemporaryDirectory(prefix="warm-python-") as tmp:
        server = _start()
        out, err = Path(tmp, "stdout"), Path(tmp, "stderr")
        request = {"code": code, "path": None if path is None else str(path), "module": module,
                   "args": command[len(how) + 1:], "cwd": str(cwd),
                   "env": dict(os.environ if env is None else env), "stdout": str(out), "stderr": str(err)}
        server.stdin.write((json.dumps(request) + "\n").encode())
        pid = _read(server, None)["pid"]
        try:
            status = _read(server, time.monotonic() + timeout)["status"]
        except TimeoutError:
            os.kill(pid, signal.SIGKILL)
            _read(server, None)
            raise subprocess.TimeoutExpired(command, timeout) from None
        return subprocess.CompletedProcess(command, status, out.read_text(errors="replace"),
                                           err.read_text(errors="replace"))
