"""The class logic (vizhooks.classroom) over each store: the teacher's secret and action numbers,
followers, polls, the gallery's limits and checks, the class's end and its time limit.

``store`` is the in-process store here; tests/conftest.py's ``class_store`` fixture adds Redis (a
real redis-server on localhost) when the Redis tests run."""

from __future__ import annotations

import io
import threading

import pytest
from PIL import Image

from vizhooks.classroom import (
    ClassError,
    ClassLimitError,
    Classroom,
    MemoryStore,
    NotTeacherError,
    Teacher,
    UnknownClassError,
    action_number,
    normalise_code,
    open_store,
)
from vizhooks.classroom.core import ALPHABET, CODE_LENGTH, FOLLOW_SECONDS, IDLE_SECONDS, MAX_MODEL_BYTES
from vizhooks.models.images import InvalidImageError


class Clock:
    """A clock the test moves: both the class's time limits and the store's follow it."""

    def __init__(self, now: float = 1_700_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def jpeg(colour: tuple[int, int, int], side: int = 32) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (side, side), colour).save(out, "JPEG")
    return out.getvalue()


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def room(class_store, clock) -> Classroom:
    return Classroom(class_store(clock), max_classes=3, max_photos=3, max_gallery_bytes=10_000,
                     clock=clock)


def numbered(clock: Clock) -> int:
    """An action number at the test clock's time (unique per call)."""
    numbered.n = getattr(numbered, "n", 0) + 1
    return int(clock.now * 1e9) + numbered.n


def test_a_class_code_is_long_and_plain(room):
    teacher = room.start()
    assert len(teacher.code) == CODE_LENGTH and set(teacher.code) <= set(ALPHABET)
    assert not set("01OIL") & set(ALPHABET)
    assert len(ALPHABET) ** CODE_LENGTH > 8e8  # one guess in 800 million
    assert normalise_code(f" {teacher.code[:3].lower()}-{teacher.code[3:]} ") == teacher.code
    assert len(teacher.secret) >= 32


def test_the_teacher_publishes_and_students_read(room, clock):
    teacher = room.start()
    with pytest.raises(UnknownClassError):
        room.state("ZZZZZZ")
    assert room.state(teacher.code).page == {}
    room.publish(teacher, {"view": "lesson", "step": 4}, photo=b"photo-bytes", number=numbered(clock))
    state = room.state(teacher.code.lower())
    assert state.page == {"view": "lesson", "step": 4} and state.version > 0
    assert room.photo(teacher.code) == b"photo-bytes"


def test_a_forged_action_is_refused(room, clock):
    teacher = room.start()
    other = room.start()
    with pytest.raises(NotTeacherError):
        room.publish(Teacher(teacher.code, "guessed-secret"), {"view": "maps"}, number=numbered(clock))
    with pytest.raises(NotTeacherError):  # another class's secret is no key to this one
        room.publish(Teacher(teacher.code, other.secret), {"view": "maps"}, number=numbered(clock))
    with pytest.raises(NotTeacherError):
        room.end(Teacher(teacher.code, "guessed-secret"), numbered(clock))
    assert room.state(teacher.code).page == {}


def test_the_teacher_shares_a_taught_model_and_only_the_teacher(room, clock):
    teacher = room.start()
    assert room.shared_model(teacher.code) is None
    room.share_model(teacher, b"head-1", numbered(clock))
    room.share_model(teacher, b"head-2", numbered(clock))  # the newer one replaces it
    assert room.shared_model(teacher.code.lower()) == b"head-2"
    with pytest.raises(NotTeacherError):
        room.share_model(Teacher(teacher.code, "guessed-secret"), b"forged", numbered(clock))
    with pytest.raises(ClassError, match="at most 2 MB"):
        room.share_model(teacher, b"x" * (MAX_MODEL_BYTES + 1), numbered(clock))
    assert room.shared_model(teacher.code) == b"head-2"
    room.end(teacher, numbered(clock))
    assert room.shared_model(teacher.code) is None


def test_a_replayed_action_is_refused(room, clock):
    teacher = room.start()
    number = numbered(clock)
    room.publish(teacher, {"step": 2}, number=number)
    room.publish(teacher, {"step": 3}, number=numbered(clock))
    with pytest.raises(NotTeacherError, match="taken already"):
        room.publish(teacher, {"step": 2}, number=number)
    stale = numbered(clock)
    clock.now += 120  # two minutes later the same (unused) number is too old
    with pytest.raises(NotTeacherError, match="too old"):
        room.publish(teacher, {"step": 2}, number=stale)
    assert room.state(teacher.code).page == {"step": 3}


def test_end_drops_everything(room, clock):
    teacher = room.start()
    room.publish(teacher, {"step": 1}, photo=b"x", number=numbered(clock))
    room.answer(teacher.code, "what", "s1", 1)
    room.send_photo(teacher.code, jpeg((255, 0, 0)))
    room.end(teacher, numbered(clock))
    assert not room.exists(teacher.code)
    with pytest.raises(UnknownClassError):
        room.state(teacher.code)
    assert room.photo(teacher.code) is None and room.gallery(teacher.code) == []
    assert teacher.code not in room.live_codes()
    with pytest.raises(UnknownClassError):
        room.answer(teacher.code, "what", "s1", 0)


def test_a_class_without_its_teacher_expires(clock):
    # the in-process store only: Redis keeps its own (real) time, which a test cannot move
    room = Classroom(MemoryStore(clock), clock=clock)
    teacher = room.start()
    room.publish(teacher, {"step": 1}, number=numbered(clock))
    clock.now += IDLE_SECONDS * 5 / 6
    room.touch(teacher)  # the teacher is still here: IDLE_SECONDS more
    clock.now += IDLE_SECONDS * 5 / 6
    assert room.state(teacher.code).page == {"step": 1}
    clock.now += IDLE_SECONDS * 0.2  # 1.03 x IDLE_SECONDS since the teacher was last seen
    with pytest.raises(UnknownClassError):
        room.state(teacher.code)
    assert room.live_codes() == []


def test_at_most_max_classes(room, clock):
    teachers = [room.start() for _ in range(3)]
    with pytest.raises(ClassLimitError, match="VIZHOOKS_MAX_CLASSES"):
        room.start()
    room.end(teachers[0], numbered(clock))
    assert room.start().code not in {t.code for t in teachers}


def test_followers_are_counted_while_they_check_in(room, clock):
    teacher = room.start()
    for session in ("a", "b", "c"):
        room.follow(teacher.code, session)
    assert room.followers(teacher.code) == 3
    room.unfollow(teacher.code, "b")  # "Explore on my own"
    assert room.followers(teacher.code) == 2
    clock.now += FOLLOW_SECONDS / 2
    room.follow(teacher.code, "a")
    clock.now += FOLLOW_SECONDS / 2 + 1  # c has not checked in for longer than FOLLOW_SECONDS
    assert room.followers(teacher.code) == 1


def test_one_answer_per_session_and_totals(room, clock):
    teacher = room.start()
    room.answer(teacher.code, "forward", "s1", 0)
    room.answer(teacher.code, "forward", "s2", 2)
    room.answer(teacher.code, "forward", "s3", 2)
    room.answer(teacher.code, "forward", "s1", 2)  # s1 changes its mind: replaces, does not add
    room.answer(teacher.code, "prehook", "s1", 1)
    assert room.totals(teacher.code, "forward", 3) == [0, 0, 3]
    assert room.totals(teacher.code, "prehook", 3) == [0, 1, 0]
    assert room.my_answer(teacher.code, "forward", "s1") == 2
    csv_text = room.totals_csv(teacher.code, [("forward", ["a", "b", "c"])])
    assert csv_text.splitlines() == ["question,choice,answers", "forward,a,0", "forward,b,0", "forward,c,3"]
    assert "s1" not in csv_text and "s2" not in csv_text


def test_gallery_checks_and_limits(room, clock):
    teacher = room.start()
    with pytest.raises(InvalidImageError):
        room.send_photo(teacher.code, b"not a picture")
    red = jpeg((255, 0, 0))
    first = room.send_photo(teacher.code, red)
    assert room.send_photo(teacher.code, red) == first  # the same photo twice is kept once
    room.send_photo(teacher.code, jpeg((0, 255, 0)))
    room.send_photo(teacher.code, jpeg((0, 0, 255)))
    with pytest.raises(ClassLimitError, match="3 photos"):
        room.send_photo(teacher.code, jpeg((9, 9, 9)))
    assert [p.data for p in room.gallery(teacher.code)][0] == red
    assert len(room.gallery(teacher.code)) == 3


def test_gallery_bytes_limit(class_store, clock):
    room = Classroom(class_store(clock), max_photos=60, max_gallery_bytes=3 * len(jpeg((1, 2, 3), 64)) - 1,
                     clock=clock)
    teacher = room.start()
    room.send_photo(teacher.code, jpeg((1, 2, 3), 64))
    room.send_photo(teacher.code, jpeg((200, 2, 3), 64))
    with pytest.raises(ClassLimitError, match="MB"):
        room.send_photo(teacher.code, jpeg((1, 200, 3), 64))
    assert len(room.gallery(teacher.code)) == 2


def test_concurrent_starts_stay_under_the_limit(class_store, clock):
    room = Classroom(class_store(clock), max_classes=5, clock=clock)
    started, refused = [], []

    def start() -> None:
        try:
            started.append(room.start())
        except ClassLimitError:
            refused.append(1)

    threads = [threading.Thread(target=start) for _ in range(12)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert len(started) <= 5 and len(started) + len(refused) == 12
    assert len({t.code for t in started}) == len(started)


def test_action_numbers_are_fresh_and_growing():
    numbers = [action_number() for _ in range(100)]
    assert numbers == sorted(numbers) and len(set(numbers)) == 100


def test_open_store():
    assert isinstance(open_store(None), MemoryStore) and isinstance(open_store(""), MemoryStore)
    with pytest.raises(ValueError, match="not a Redis URL"):
        open_store("http://example.org")


def test_memory_store_time_limits(clock):
    store = MemoryStore(clock)
    store.set("a", b"1", ttl=10)
    store.hset("h", "f", b"v")
    store.expire("h", 5)
    clock.now += 6
    assert store.get("a") == b"1" and store.hgetall("h") == {}
    clock.now += 5
    assert store.get("a") is None and len(store) == 0
    assert store.incrby("n", 3) == 3 and store.incrby("n", -1) == 2


def test_tries_are_counted_per_address_in_the_store_shared_by_every_server(class_store, clock):
    """The passphrase's try limit lives in the class store: a reload (a new session) or another server
    on the same store counts on; another address has its own count; the window passes."""
    store = class_store(clock)
    one, other_server = Classroom(store, clock=clock), Classroom(store, clock=clock)
    assert [one.attempt("passphrase:10.0.0.7", 3) for _ in range(2)] == [True, True]
    assert other_server.attempt("passphrase:10.0.0.7", 3) is True
    assert one.attempt("passphrase:10.0.0.7", 3) is False and other_server.attempt("passphrase:10.0.0.7", 3) is False
    assert one.attempt("passphrase:10.0.0.8", 3) is True  # another address
    if isinstance(store, MemoryStore):  # Redis keeps its own time: the window is the key's TTL there
        clock.now += 61
        assert one.attempt("passphrase:10.0.0.7", 3) is True


def test_a_class_without_its_teacher_page_ends_after_ten_minutes(class_store, clock):
    from vizhooks.classroom.core import IDLE_SECONDS

    assert IDLE_SECONDS == 600
    room = Classroom(class_store(clock), clock=clock)
    lead = room.start()
    clock.now += IDLE_SECONDS - 5
    room.touch(lead)  # the teacher's open page renews it
    clock.now += IDLE_SECONDS - 5
    assert lead.code in room.live_codes()
    clock.now += 10
    assert lead.code not in room.live_codes()


def test_a_browser_finds_the_class_it_leads_until_the_class_ends(class_store, clock):
    room = Classroom(class_store(clock), clock=clock)
    lead = room.start()
    room.remember_lead("browser-a", lead)
    assert room.lead_of("browser-a") == lead and room.lead_of("browser-b") is None
    other = Classroom(room.store, clock=clock)  # another server on the same store
    assert other.lead_of("browser-a") == lead
    room.end(lead, numbered(clock))
    assert room.lead_of("browser-a") is None  # an ended class is found by nobody
    second = room.start()
    room.remember_lead("browser-a", second)
    room.forget_lead("browser-a")
    assert room.lead_of("browser-a") is None

