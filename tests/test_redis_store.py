"""Classes in Redis (VIZHOOKS_CLASS_STORE=redis://...): two servers sharing one class, a Redis that
is missing at start, lost during a class and back again, one that stops answering, and the time
limit of every key. Each test runs a real ``redis-server`` on localhost (tests/conftest.py); the class
logic itself runs over both stores in tests/test_classroom.py."""

from __future__ import annotations

import io
import os
import signal
import socket
import time

import pytest
import redis
from PIL import Image

from vizhooks.classroom import (
    Classroom,
    MemoryStore,
    NotTeacherError,
    StoreUnavailableError,
    Teacher,
    UnknownClassError,
    action_number,
    open_store,
)
from vizhooks.classroom.core import IDLE_SECONDS, PREFIX
from vizhooks.classroom.redis_store import TIMEOUT, RedisStore

#: No hang: a call to a Redis that is gone or silent ends within the socket timeout (TIMEOUT, 2 s);
#: this bound only leaves room for a busy machine and is no speed target.
NO_HANG = 10.0


def jpeg(colour: tuple[int, int, int], side: int = 32) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (side, side), colour).save(out, "JPEG")
    return out.getvalue()


def closed_port() -> int:
    """A localhost port nobody listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def one_sentence(message: str) -> bool:
    return "\n" not in message and message.endswith(".") and ". " not in message


def unavailable(call, *args, **kwargs) -> tuple[str, float]:
    """The sentence of the StoreUnavailableError that ``call`` raises, and how long it took."""
    began = time.monotonic()
    with pytest.raises(StoreUnavailableError) as caught:
        call(*args, **kwargs)
    return str(caught.value), time.monotonic() - began


@pytest.fixture
def redis_db(redis_url) -> str:
    """The session's Redis, emptied."""
    redis.Redis.from_url(redis_url).flushdb()
    return redis_url


def test_each_command_means_what_it_means_in_the_memory_store(redis_db):
    """The same commands on both stores give the same answers (the in-process store as the oracle),
    time limits included: Redis's real ones are waited for, the memory store's clock is moved."""
    now = [0.0]
    memory, store, client = MemoryStore(lambda: now[0]), RedisStore(redis_db), redis.Redis.from_url(redis_db)

    def both(command: str, *args, **kwargs) -> object:
        expected = getattr(memory, command)(*args, **kwargs)
        assert getattr(store, command)(*args, **kwargs) == expected, (command, args)
        return expected

    both("set", "a", b"1")
    both("set", "b", b"2", ttl=0.3)
    both("set", "c", b"3", ttl=0)  # gone at once
    both("set", "d", b"4", ttl=60)
    both("hset", "h", "f", b"v")
    assert both("hsetnx", "h", "f", b"w") is False and both("hsetnx", "h", "g", b"w") is True
    assert both("hgetall", "h") == {"f": b"v", "g": b"w"} and both("hget", "h", "x") is None
    both("expire", "h", 0.3)
    assert both("incrby", "n", 5) == 5 and both("incrby", "n", -2) == 3 and both("get", "n") == b"3"
    both("delete")  # nothing to delete
    both("hdel", "h")
    assert [both("get", key) for key in "abcd"] == [b"1", b"2", None, b"4"]
    assert 0 < client.pttl("d") <= 60_000 and client.pttl("a") == -1
    with pytest.raises(TypeError):
        store.hset("a", "f", b"x")
    time.sleep(0.4)
    now[0] += 0.4
    assert [both("get", key) for key in "abcd"] == [b"1", None, None, b"4"] and both("hgetall", "h") == {}
    both("hset", "k", "f", b"v")
    both("hdel", "k", "f", "nothing")  # its last field gone, the hash is gone
    both("delete", "a", "d", "nothing")
    assert both("get", "a") is None and client.keys("*") == [b"n"]


def test_two_servers_share_a_class(redis_db):
    first, second = Classroom(open_store(redis_db)), Classroom(open_store(redis_db))  # two page servers
    teacher = first.start()
    photo = jpeg((10, 120, 200))
    first.publish(teacher, {"view": "lesson", "step": 3}, photo=photo)
    assert second.state(teacher.code).page == {"view": "lesson", "step": 3}
    assert second.photo(teacher.code) == photo
    assert second.live_codes() == [teacher.code]

    second.follow(teacher.code, "s1")  # students on the second server
    second.follow(teacher.code, "s2")
    assert first.followers(teacher.code) == 2
    second.answer(teacher.code, "forward", "s1", 1)
    second.answer(teacher.code, "forward", "s2", 1)
    assert first.totals(teacher.code, "forward", 3) == [0, 2, 0]
    red, green = jpeg((255, 0, 0)), jpeg((0, 255, 0))
    second.send_photo(teacher.code, red)
    first.send_photo(teacher.code, green)
    assert sorted(p.data for p in first.gallery(teacher.code)) == sorted([red, green])
    assert [p.data for p in second.gallery(teacher.code)] == [p.data for p in first.gallery(teacher.code)]

    number = action_number()
    first.publish(teacher, {"step": 4}, number=number)
    assert second.state(teacher.code).page == {"step": 4}
    with pytest.raises(NotTeacherError, match="taken already"):  # an action replayed on the other server
        second.publish(teacher, {"step": 5}, number=number)
    with pytest.raises(NotTeacherError):
        second.publish(Teacher(teacher.code, "guessed-secret"), {"step": 5})
    second.publish(teacher, {"step": 5})  # the teacher's link opened on the other server
    assert first.state(teacher.code).page == {"step": 5}

    first.end(teacher)
    with pytest.raises(UnknownClassError):
        second.state(teacher.code)
    assert second.gallery(teacher.code) == [] and second.live_codes() == []
    assert redis.Redis.from_url(redis_db).keys(f"{PREFIX}*") == []


def test_redis_missing_at_start_is_one_sentence():
    url = f"redis://127.0.0.1:{closed_port()}/0"
    message, took = unavailable(open_store, url)  # raised: no in-process store the other servers cannot see
    assert one_sentence(message), message
    assert url in message and "VIZHOOKS_CLASS_STORE" in message and "start Redis" in message
    assert took < NO_HANG


@pytest.mark.parametrize("url", ["redis://:s3cret-pw@127.0.0.1:{port}/0", "redis://teacher:s3cret-pw@127.0.0.1:{port}/0",
                                 "redis://127.0.0.1:{port}/0?password=s3cret-pw"])
def test_a_password_is_never_shown(url):
    message, _ = unavailable(open_store, url.format(port=closed_port()))
    assert "s3cret-pw" not in message and "***" in message, message
    assert "s3cret-pw" not in repr(RedisStore(url.format(port=1)))


def test_a_silent_redis_costs_at_most_the_timeout():
    with socket.create_server(("127.0.0.1", 0)) as silent:  # accepts connections, never answers
        url = f"redis://127.0.0.1:{silent.getsockname()[1]}/0"
        message, took = unavailable(open_store, url)
    assert one_sentence(message) and url in message, message
    assert TIMEOUT <= took + 0.1 and took < NO_HANG


def test_redis_lost_during_a_class_and_back(redis_server):
    store = open_store(redis_server.url)
    room = Classroom(store)
    teacher = room.start()
    room.publish(teacher, {"step": 2}, photo=b"photo")
    room.follow(teacher.code, "s1")
    room.answer(teacher.code, "forward", "s1", 2)

    redis_server.stop()
    calls = [(room.state, (teacher.code,)), (room.photo, (teacher.code,)), (room.publish, (teacher, {"step": 3})),
             (room.follow, (teacher.code, "s2")), (room.answer, (teacher.code, "forward", "s2", 0)),
             (room.send_photo, (teacher.code, jpeg((1, 2, 3)))), (room.gallery, (teacher.code,)),
             (room.start, ()), (room.end, (teacher,))]
    for call, args in calls:
        message, took = unavailable(call, *args)
        assert one_sentence(message) and redis_server.url in message, (call.__name__, message)
        assert took < NO_HANG, call.__name__

    redis_server.start()  # the same port, the same data folder
    assert room.state(teacher.code).page == {"step": 2}  # the same store object: no new connection by hand
    assert room.photo(teacher.code) == b"photo"
    assert room.totals(teacher.code, "forward", 3) == [0, 0, 1]
    room.publish(teacher, {"step": 3})
    assert Classroom(open_store(redis_server.url)).state(teacher.code).page == {"step": 3}


@pytest.mark.parametrize("redis_server", [False], indirect=True)
def test_a_redis_restarted_without_its_data_ends_the_class(redis_server):
    room = Classroom(open_store(redis_server.url))
    teacher = room.start()
    room.publish(teacher, {"step": 2})
    redis_server.stop()
    redis_server.start()  # nothing was written to disk: the class is gone, said as for an ended class
    with pytest.raises(UnknownClassError):
        room.state(teacher.code)
    with pytest.raises(UnknownClassError):
        room.publish(teacher, {"step": 3})
    with pytest.raises(UnknownClassError):
        room.answer(teacher.code, "forward", "s1", 0)
    assert room.live_codes() == []
    assert room.state(room.start().code).page == {}  # a new class starts


def test_a_redis_that_stops_answering_and_resumes(redis_server):
    room = Classroom(RedisStore(redis_server.url, timeout=0.5))
    teacher = room.start()
    room.publish(teacher, {"step": 1})
    os.kill(redis_server.process.pid, signal.SIGSTOP)  # alive, its port open, but silent
    try:
        message, took = unavailable(room.state, teacher.code)
        assert one_sentence(message) and "imeout" in message, message
        assert took < NO_HANG
    finally:
        os.kill(redis_server.process.pid, signal.SIGCONT)
    assert room.state(teacher.code).page == {"step": 1}


def test_every_key_of_a_class_has_a_time_limit(redis_db):
    room = Classroom(open_store(redis_db))
    teacher = room.start()
    room.publish(teacher, {"step": 1}, photo=b"photo")
    client = redis.Redis.from_url(redis_db)

    def limits() -> dict[str, int]:
        return {key.decode(): client.pttl(key) for key in client.keys(f"{PREFIX}{teacher.code}*")}

    published = limits()
    key = f"{PREFIX}{teacher.code}"
    assert {key, f"{key}:state", f"{key}:photo", f"{key}:actions"} <= set(published)
    assert all(0 < ms <= IDLE_SECONDS * 1000 for ms in published.values()), published
    # what students add after the teacher's last action must end with the class too
    room.follow(teacher.code, "s1")
    room.answer(teacher.code, "forward", "s1", 1)
    room.send_photo(teacher.code, jpeg((0, 0, 255)))
    after = limits()
    assert len(after) == len(published) + 5  # followers, answers, the gallery, its bytes, the photo
    assert all(0 < ms <= IDLE_SECONDS * 1000 for ms in after.values()), after
