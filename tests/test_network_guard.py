"""The network guard (tests/netguard, installed by tests/conftest.py) refuses what leaves this machine, in
this process, in child Pythons, in the Streamlit server and in Chromium, and lets loopback through.

Every refusal is asserted by the guard's own sentence, so these tests fail when the guard is gone, not
merely because the machine happens to be offline. Addresses are from the documentation ranges
(RFC 5737, RFC 3849): nothing answers there even where a network exists."""

from __future__ import annotations

import http.server
import ipaddress
import os
import shutil
import socket
import subprocess
import sys
import threading
import urllib.request
from pathlib import Path

import pytest
import vizhooks_netguard

from benchmarks.server import CHROMIUM_ARGS, ROOT, start, stop, wait_healthy

REFUSED = "vizhooks network guard refused"
FAR = ("203.0.113.5", 80)  # TEST-NET-3
FAR_V6 = ("2001:db8::1", 80)  # the IPv6 documentation prefix
NAME = "example.com"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"

#: What a guarded process prints for each probe: the exception's class and text, or "reached".
PROBES = '''
import os, socket
probes = {
    "tcp": lambda: socket.create_connection(("203.0.113.5", 80), timeout=5),
    "udp": lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"x", ("203.0.113.5", 53)),
    "dns": lambda: socket.getaddrinfo("example.com", 443),
}
lines = []
for name, probe in probes.items():
    try:
        probe()
        lines.append(f"{name}: reached")
    except OSError as exc:
        lines.append(f"{name}: {type(exc).__name__}: {exc}")
lines.append(f"offline: {os.environ.get('VIZHOOKS_OFFLINE')}")
'''


def _refused_everywhere(text: str) -> None:
    lines = dict(line.split(": ", 1) for line in text.strip().splitlines())
    for probe in ("tcp", "udp"):
        assert lines[probe].startswith("OSError: ") and REFUSED in lines[probe], lines
    assert lines["dns"].startswith("gaierror: ") and REFUSED in lines["dns"], lines


def test_tcp_connect_and_connect_ex_are_refused():
    with pytest.raises(OSError, match=REFUSED):
        socket.create_connection(FAR, timeout=5)
    with socket.socket() as s, pytest.raises(OSError, match=REFUSED):
        s.connect_ex(FAR)
    with socket.socket(socket.AF_INET6) as s, pytest.raises(OSError, match=REFUSED):
        s.connect(FAR_V6)
    with socket.socket(socket.AF_INET6) as s, pytest.raises(OSError, match=REFUSED):
        s.connect(("::ffff:203.0.113.5", 80))  # IPv4 spelt as IPv6 is still IPv4


def test_udp_sendto_and_connect_are_refused():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        with pytest.raises(OSError, match=REFUSED):
            s.sendto(b"x", ("203.0.113.5", 53))
        with pytest.raises(OSError, match=REFUSED):
            s.sendto(b"x", 0, ("203.0.113.5", 53))
        with pytest.raises(OSError, match=REFUSED):
            s.sendmsg([b"x"], [], 0, ("203.0.113.5", 53))
        with pytest.raises(OSError, match=REFUSED):
            s.connect(("203.0.113.5", 53))


@pytest.mark.parametrize("lookup", [
    lambda: socket.getaddrinfo(NAME, 443),
    lambda: socket.gethostbyname(NAME),
    lambda: socket.gethostbyname_ex(NAME),
    lambda: socket.gethostbyaddr("203.0.113.5"),  # a PTR query
    lambda: socket.create_connection((NAME, 80), timeout=5),
    lambda: urllib.request.urlopen(f"http://{NAME}/", timeout=5),
], ids=["getaddrinfo", "gethostbyname", "gethostbyname_ex", "gethostbyaddr", "create_connection", "urlopen"])
def test_name_lookups_are_refused(lookup):
    with pytest.raises(OSError, match=REFUSED) as info:
        lookup()
    err = info.value.reason if hasattr(info.value, "reason") else info.value  # urllib wraps it
    assert isinstance(err, socket.gaierror)


def test_loopback_and_own_addresses_still_work():
    with socket.create_server(("127.0.0.1", 0)) as server:
        with socket.create_connection(("localhost", server.getsockname()[1]), timeout=5) as client:
            peer, _ = server.accept()
            with peer:
                client.sendall(b"ping")
                assert peer.recv(4) == b"ping"
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as rx, \
            socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as tx:
        rx.bind(("127.0.0.1", 0))
        tx.sendto(b"pong", rx.getsockname())
        assert rx.recv(4) == b"pong"
    assert socket.gethostbyname(socket.gethostname())  # this machine's own name stays resolvable
    own = [a for a in vizhooks_netguard.own_addresses() if a.version == 4 and not a.is_loopback]
    if own:  # WebRTC's host candidates and a Ray node use these
        with socket.create_server(("0.0.0.0", 0)) as server:
            with socket.create_connection((str(own[0]), server.getsockname()[1]), timeout=5):
                server.accept()[0].close()


def test_unix_sockets_and_mdns_pass(tmp_path):
    path = str(tmp_path / "s")
    with socket.socket(socket.AF_UNIX) as server, socket.socket(socket.AF_UNIX) as client:
        server.bind(path)
        server.listen(1)
        client.connect(path)
    # aiortc resolves `.local` ICE candidates on the mDNS group; decided here without sending a packet
    vizhooks_netguard.check_peer(("224.0.0.251", 5353))
    vizhooks_netguard.check_peer(("ff02::fb", 5353, 0, 0))
    with pytest.raises(OSError, match=REFUSED):
        vizhooks_netguard.check_peer(("224.0.0.251", 80))


def test_own_addresses_come_from_the_kernel():
    own = vizhooks_netguard.own_addresses()  # /proc and ioctl, never DNS
    assert ipaddress.ip_address("127.0.0.1") in own and ipaddress.ip_address(FAR[0]) not in own


@pytest.mark.parametrize("env", ["inherited", "pythonpath replaced"])
def test_child_python_is_guarded(env):
    # "pythonpath replaced" is what test_exemplars and test_zoo do: {**os.environ, "PYTHONPATH": root}
    child_env = None if env == "inherited" else {**os.environ, "PYTHONPATH": str(ROOT)}
    run = subprocess.run([sys.executable, "-c", PROBES + "print('\\n'.join(lines))"], env=child_env,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    _refused_everywhere(run.stdout)
    assert "offline: 1" in run.stdout


def test_a_sitecustomize_already_there_still_runs(tmp_path):
    (tmp_path / "sitecustomize.py").write_text("import builtins\nbuiltins.hidden_sitecustomize_ran = True\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([vizhooks_netguard.GUARD_DIR, str(tmp_path)])}
    code = PROBES + "import builtins\nprint('\\n'.join(lines))\nprint('hidden:', builtins.hidden_sitecustomize_ran)"
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "hidden: True" in run.stdout
    _refused_everywhere(run.stdout.replace("hidden: True", ""))


@pytest.mark.slow
def test_streamlit_server_is_guarded(tmp_path):
    # The script health check runs the script inside the server process, as a session would.
    script = tmp_path / "probe_page.py"
    script.write_text(PROBES + f"open({str(tmp_path / 'probes.txt')!r}, 'w').write('\\n'.join(lines))\n")
    env = {**os.environ, "TORCH_HOME": str(tmp_path / "th")}
    with (tmp_path / "streamlit.log").open("w") as log:
        proc, url = start(env, log, script=script, options=("--server.scriptHealthCheckEnabled", "true"))
        try:
            wait_healthy(url, proc)
            with urllib.request.urlopen(f"{url}/_stcore/script-health-check", timeout=120) as resp:
                assert resp.status == 200
        finally:
            stop(proc)
    _refused_everywhere((tmp_path / "probes.txt").read_text())


class _Marker(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b"<html><body>guard-marker</body></html>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.mark.browser
def test_chromium_resolves_no_names(tmp_path):
    # Without the rules Chromium answers `*.localhost` itself with 127.0.0.1, with no DNS at all, so the
    # page below loads; with CHROMIUM_ARGS the name must not resolve while 127.0.0.1 still does.
    if not Path(CHROMIUM).exists():
        pytest.fail("chromium is missing: `make test` installs it with apt-get")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Marker)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]

    def dom(host: str) -> str:
        run = subprocess.run([CHROMIUM, *CHROMIUM_ARGS, f"--user-data-dir={tmp_path / host}", "--dump-dom",
                              f"http://{host}:{port}/"], capture_output=True, text=True, timeout=120)
        return run.stdout

    try:
        assert "guard-marker" in dom("127.0.0.1")
        assert "guard-marker" not in dom("netguard.localhost")
    finally:
        server.shutdown()
        server.server_close()
