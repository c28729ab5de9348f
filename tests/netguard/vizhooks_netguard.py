"""The test suite's network guard: a guarded Python process reaches only this machine.

Installed by ``tests/conftest.py`` in the pytest process before it imports anything else, and by
``sitecustomize.py`` (this folder, put on ``PYTHONPATH`` by that conftest) in every Python process the
tests start: the Streamlit server, the CLI, benchmarks, Ray's workers.

Refused, with an ``OSError`` (``socket.gaierror`` for names) whose message starts with
``vizhooks network guard``:

- name look-ups (``getaddrinfo``, ``gethostbyname[_ex]``, ``gethostbyaddr``, ``getnameinfo``) of
  anything but localhost, this machine's own host name and the names in ``/etc/hosts``;
- TCP ``connect`` / ``connect_ex`` and UDP ``connect`` / ``sendto`` / ``sendmsg`` to an address that
  is not loopback, unspecified (``0.0.0.0``, ``::``), one of this machine's interface addresses
  (WebRTC's ICE host candidates, a Ray node) or the mDNS group on port 5353 (``224.0.0.251``,
  ``ff02::fb``: aiortc resolves ``.local`` ICE candidates there).

Unix sockets and other families pass. Binding is never refused. A subprocess started with an ``env``
that lost this folder from ``PYTHONPATH`` gets it back, so the guard follows every child Python.

Native code is outside Python's socket module: Chromium is held by ``--host-resolver-rules``
(``benchmarks/server.py``), Ray's C++ core by ``ray.init(_node_ip_address="127.0.0.1")``.
"""

from __future__ import annotations

import errno
import ipaddress
import os
import socket
import subprocess

GUARD_DIR = os.path.dirname(os.path.abspath(__file__))
MDNS_PORT = 5353
_MDNS = {ipaddress.ip_address("224.0.0.251"), ipaddress.ip_address("ff02::fb")}
_LOCAL_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"}
_INET = (socket.AF_INET, socket.AF_INET6)
_SIOCGIFADDR = 0x8915  # Linux ioctl: an interface's IPv4 address

_real = {}  # what install() replaced, by name
_own: frozenset = frozenset()
_names: frozenset = frozenset()
_allowed: set = set()  # (host, port) pairs already let through; refusals are never remembered


def _refused(what: str) -> OSError:
    return OSError(errno.ENETUNREACH, f"vizhooks network guard refused {what}: tests may reach only this "
                                      "machine (loopback, its own addresses, unix sockets)")


def _unresolved(name) -> socket.gaierror:
    return socket.gaierror(socket.EAI_NONAME, f"vizhooks network guard refused to look up {name!r}: tests may "
                                              "resolve only localhost, this host's name and /etc/hosts")


def _fib_trie() -> set:
    """IPv4 addresses marked LOCAL in the kernel's routing table (all of them, aliases included)."""
    found, last = set(), None
    try:
        with open("/proc/net/fib_trie") as f:
            for line in f:
                if "|--" in line:
                    last = line.split("|--")[1].strip()
                elif last and "/32 host LOCAL" in line:
                    found.add(ipaddress.ip_address(last))
    except (OSError, ValueError):
        pass
    return found


def _ioctl_v4() -> set:
    """Each interface's primary IPv4 address (where /proc is missing or hides some)."""
    import fcntl
    import struct

    found = set()
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        for _, name in socket.if_nameindex():
            try:
                req = fcntl.ioctl(s.fileno(), _SIOCGIFADDR, struct.pack("256s", name.encode()[:15]))
            except OSError:  # an interface without IPv4
                continue
            found.add(ipaddress.IPv4Address(req[20:24]))
    return found


def _if_inet6() -> set:
    found = set()
    try:
        with open("/proc/net/if_inet6") as f:
            for line in f:
                found.add(ipaddress.IPv6Address(bytes.fromhex(line.split()[0])))
    except (OSError, ValueError, IndexError):
        pass
    return found


def own_addresses() -> frozenset:
    """This machine's interface addresses, read from the kernel (never from DNS), without scope ids."""
    found = _fib_trie() | _if_inet6()
    try:
        found |= _ioctl_v4()
    except (ImportError, OSError, AttributeError):  # not Linux
        pass
    return frozenset(found)


def _hosts_names() -> set:
    names = set()
    try:
        with open("/etc/hosts") as f:
            for line in f:
                names.update(n.lower().rstrip(".") for n in line.split("#")[0].split()[1:])
    except OSError:
        pass
    return names


def _literal(host):
    """The IP address that ``host`` spells out, or None for a name."""
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        pass
    try:  # inet_aton's short forms, "127.1"
        return ipaddress.IPv4Address(socket.inet_aton(host))
    except (OSError, ValueError, TypeError):
        return None


def _local_ip(ip) -> bool:
    global _own
    if ip.version == 6:
        if ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped
        elif ip.scope_id:
            ip = ipaddress.IPv6Address(str(ip).split("%")[0])
    if ip.is_loopback or ip.is_unspecified or ip in _own:
        return True
    _own = own_addresses()  # an interface may have come up since the last look
    return ip in _own


def _allowed_peer(host: str, port) -> bool:
    if (host, port) in _allowed:  # sendto runs per packet (WebRTC): parse each peer once
        return True
    ip = _literal(host)
    if ip is None:  # a name: connect() resolves it, so the name rules apply
        ok = _allowed_name(host)
    else:
        ok = _local_ip(ip) or (ip in _MDNS and port == MDNS_PORT)
    if ok and len(_allowed) < 4096:
        _allowed.add((host, port))
    return ok


def _allowed_name(host) -> bool:
    if host is None:
        return True
    if isinstance(host, bytes):
        host = host.decode("idna", "replace")
    name = host.lower().rstrip(".")
    if name in ("", "<broadcast>") or name in _LOCAL_NAMES or name in _names:
        return True
    if name == socket.gethostname().lower():
        return True
    ip = _literal(name)
    return ip is not None  # a literal needs no DNS; where it may go is checked on connect


def check_peer(address) -> None:
    """Raise the guard's OSError unless an AF_INET/AF_INET6 ``address`` is on this machine."""
    host, port = address[0], address[1]
    if isinstance(host, bytes):
        host = host.decode("idna", "replace")
    if not _allowed_peer(host, port):
        raise _refused(f"a connection to {host} port {port}")


def _guarded(sock, address) -> None:
    if isinstance(address, tuple) and len(address) >= 2 and sock.family in _INET:
        check_peer(address)


def _connect(self, address):
    _guarded(self, address)
    return _real["connect"](self, address)


def _connect_ex(self, address):
    _guarded(self, address)
    return _real["connect_ex"](self, address)


def _sendto(self, data, *rest):
    _guarded(self, rest[-1] if rest else None)
    return _real["sendto"](self, data, *rest)


def _sendmsg(self, buffers, *rest, **kwargs):
    address = kwargs.get("address", rest[2] if len(rest) >= 3 else None)
    _guarded(self, address)
    return _real["sendmsg"](self, buffers, *rest, **kwargs)


def _getaddrinfo(host, *args, **kwargs):
    if not _allowed_name(host):
        raise _unresolved(host)
    return _real["getaddrinfo"](host, *args, **kwargs)


def _gethostbyname(name):
    if not _allowed_name(name):
        raise _unresolved(name)
    return _real["gethostbyname"](name)


def _gethostbyname_ex(name):
    if not _allowed_name(name):
        raise _unresolved(name)
    return _real["gethostbyname_ex"](name)


def _reverse_ok(host) -> bool:
    ip = _literal(host)
    return _local_ip(ip) if ip is not None else _allowed_name(host)


def _gethostbyaddr(ip_or_name):
    if not _reverse_ok(ip_or_name):  # a PTR query for a foreign address goes to DNS
        raise _unresolved(ip_or_name)
    return _real["gethostbyaddr"](ip_or_name)


def _getnameinfo(sockaddr, flags):
    if not flags & socket.NI_NUMERICHOST and not _reverse_ok(sockaddr[0]):
        raise _unresolved(sockaddr[0])
    return _real["getnameinfo"](sockaddr, flags)


def with_guard_path(env: dict) -> dict:
    """``env`` with this folder first on PYTHONPATH (other entries kept, in order)."""
    parts = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    if GUARD_DIR not in parts:  # the absolute path: a relative one breaks in a child with another cwd
        env = {**env, "PYTHONPATH": os.pathsep.join([GUARD_DIR, *parts])}
    return env


def _popen_init(self, *args, **kwargs):
    if kwargs.get("env") is not None:  # an explicit env, e.g. {**os.environ, "PYTHONPATH": root}
        kwargs["env"] = with_guard_path(kwargs["env"])
    return _real["Popen.__init__"](self, *args, **kwargs)


def install() -> None:
    """Guard this process (idempotent); children inherit it through PYTHONPATH."""
    global _own, _names
    if getattr(socket, "_vizhooks_netguard", False):
        return
    _own, _names = own_addresses(), frozenset(_hosts_names())
    for name, guard in (("connect", _connect), ("connect_ex", _connect_ex), ("sendto", _sendto),
                        ("sendmsg", _sendmsg)):
        _real[name] = getattr(socket.socket, name)
        setattr(socket.socket, name, guard)
    for name, guard in (("getaddrinfo", _getaddrinfo), ("gethostbyname", _gethostbyname),
                        ("gethostbyname_ex", _gethostbyname_ex), ("gethostbyaddr", _gethostbyaddr),
                        ("getnameinfo", _getnameinfo)):
        _real[name] = getattr(socket, name)
        setattr(socket, name, guard)
    _real["Popen.__init__"] = subprocess.Popen.__init__
    subprocess.Popen.__init__ = _popen_init
    socket._vizhooks_netguard = True


def export(environ=os.environ) -> None:
    """Make every child process inherit the guard (PYTHONPATH) and the offline switch."""
    environ["PYTHONPATH"] = with_guard_path(dict(environ))["PYTHONPATH"]
    environ["VIZHOOKS_OFFLINE"] = "1"
