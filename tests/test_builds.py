"""Files built once per key in a thread of their own (vizhooks/page/builds.py): single flight, progress,
failures kept and tried again, finished bytes kept for the next asker."""

from __future__ import annotations

import threading

from vizhooks.page.builds import Builds


def test_two_concurrent_requests_make_one_build():
    builds = Builds(1e6)
    calls: list[str] = []
    gate, both = threading.Event(), threading.Barrier(2)

    def make(progress):
        calls.append("made")
        progress(1, 2)
        assert gate.wait(30)
        progress(2, 2)
        return b"lesson"

    got: list = []

    def ask():
        both.wait()  # the two requests at the same moment
        got.append(builds.start(("take-home", "html"), "html", 2, make))

    askers = [threading.Thread(target=ask) for _ in range(2)]
    for asker in askers:
        asker.start()
    for asker in askers:
        asker.join(30)
    assert got[0] is got[1] and got[0].running
    assert builds.find(("take-home", "html")).done == 1  # its progress, seen by every asker
    gate.set()
    assert builds.wait(30)
    assert calls == ["made"] and builds.made == 1
    found = builds.find(("take-home", "html"))
    assert found.data == b"lesson" and not found.running and (found.done, found.total) == (2, 2)
    assert builds.last_seconds("html") == found.seconds()
    again = builds.start(("take-home", "html"), "html", 2, make)  # made: no second build
    assert again is found and calls == ["made"]


def test_a_failed_build_is_kept_to_say_so_and_the_next_request_tries_again():
    builds = Builds(1e6)
    tries: list[int] = []

    def make(progress):
        tries.append(1)
        if len(tries) == 1:
            raise ValueError("the photo cannot be read")
        return b"ok"

    builds.start("k", "ipynb", 2, make)
    assert builds.wait(30)
    failed = builds.find("k")
    assert isinstance(failed.error, ValueError) and failed.data is None and not failed.running
    builds.start("k", "ipynb", 2, make)
    assert builds.wait(30)
    assert builds.find("k").data == b"ok" and len(tries) == 2


def test_finished_files_are_bounded_in_bytes():
    builds = Builds(10)
    for key in ("a", "b"):
        builds.start(key, "html", 1, lambda progress: b"12345678")
        assert builds.wait(30)
    assert builds.find("a") is None and builds.find("b").data == b"12345678"  # the older one made room
