"""A class: a teacher who leads, students who follow, polls and a gallery of the students' photos.

Everything a class holds lives in a :class:`~vizhooks.classroom.store.Store` under ``vz:class:<CODE>``
keys, each with the class's time limit, which every teacher action renews: a class the teacher has
left for ``idle_seconds`` (10 minutes without its teacher page) is gone with all it held. Nothing here
knows Streamlit; the page (vizhooks.page.classes) calls these methods from its sessions.

Who may do what:

- The teacher holds the class's secret (from :meth:`Classroom.start`, or a teacher link). Each
  teacher action carries the secret and a fresh action number; the store keeps only the secret's
  SHA-256, compares in constant time, and takes each action number once, within a minute of the
  server's clock: a forged action (wrong secret) and a replayed one (a number already used, or an
  old one) are refused with :class:`NotTeacherError`.
- A student's session is known only by an opaque id (the page hashes Streamlit's session id): an
  answer or a photo says nothing else about its sender.
"""

from __future__ import annotations

import csv
import hashlib
import hmac
import io
import json
import secrets
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from vizhooks.classroom.store import MemoryStore, Store
from vizhooks.errors import CodedError
from vizhooks.models.images import load_image

#: Class codes: 6 symbols from 31 that cannot be mistaken for each other on a projector (no 0/O, 1/I/L).
ALPHABET = "23456789ABCDEFGHJKMNPQRSTUVWXYZ"
CODE_LENGTH = 6
PREFIX = "vz:class:"
REGISTRY = "vz:classes"
#: A class whose teacher page has not been open for this long ends (the open page renews it every few
#: seconds), so a visitor cannot hold the server's class slots for hours (VIZHOOKS_CLASS_IDLE_MINUTES).
IDLE_SECONDS = 10 * 60
FOLLOW_SECONDS = 15.0  # a follower not heard from for this long no longer counts
ACTION_WINDOW = 60.0  # a teacher action older than this (by its number) is refused
MAX_MODEL_BYTES = 2_000_000  # a shared taught head: 6 classes x 4096 features of VGG is 0.1 MB


class ClassError(CodedError):
    """A class request that cannot be done; the sentence says why (``code`` and ``values`` for a page
    in another language)."""


class UnknownClassError(ClassError, KeyError):
    """No class with this code (never started, ended, or expired)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "unknown class"


class NotTeacherError(ClassError, PermissionError):
    """A teacher action without the class's secret, or one already used (forged or replayed)."""


class ClassLimitError(ClassError):
    """Too many classes at once, or a gallery that is full."""


@dataclass(frozen=True)
class Teacher:
    """What the teacher's session holds: the class code and its secret."""

    code: str
    secret: str


@dataclass(frozen=True)
class ClassState:
    """What the teacher last showed: ``page`` (view, step, model, layers, display settings, the
    photo's digest, revealed polls, the gallery's spotlight: whatever the page puts there),
    ``version`` (the action number that set it) and whether the class has a photo."""

    code: str
    version: int
    page: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class GalleryPhoto:
    id: str
    data: bytes
    sent: float


def _sha(text: str) -> bytes:
    return hashlib.sha256(text.encode()).digest()


def normalise_code(code: str) -> str:
    """A code as typed or read from a link: upper case, without spaces or dashes."""
    return "".join(ch for ch in str(code).upper() if ch.isalnum())


def action_number() -> int:
    """A fresh action number: the clock in nanoseconds (unique per action, growing)."""
    return time.time_ns()


class Classroom:
    """The classes of a store, with their limits."""

    def __init__(self, store: Store, *, max_classes: int = 20, idle_seconds: float = IDLE_SECONDS,
                 max_photos: int = 60, max_gallery_bytes: int = 60_000_000, clock: Any = time.time) -> None:
        self.store = store
        self.max_classes = int(max_classes)
        self.idle_seconds = float(idle_seconds)
        self.max_photos = int(max_photos)
        self.max_gallery_bytes = int(max_gallery_bytes)
        self._clock = clock

    # --- keys -----------------------------------------------------------------------------------
    @staticmethod
    def _key(code: str, part: str = "") -> str:
        return f"{PREFIX}{code}{':' + part if part else ''}"

    def _keys(self, code: str) -> list[str]:
        parts = ["", "state", "photo", "model", "followers", "answers", "gallery", "gallery_bytes", "actions"]
        photos = [f"gallery:{pid}" for pid in self.store.hgetall(self._key(code, "gallery"))]
        return [self._key(code, part) for part in (*parts, *photos)]

    def _now(self) -> float:
        return float(self._clock())

    # --- the class's life -----------------------------------------------------------------------
    def live_codes(self) -> list[str]:
        """Codes of the classes running now: registered and not past their time (a class just
        claimed by :meth:`start` counts before its secret is written, so racing starts see it)."""
        now = self._now()
        codes: list[str] = []
        gone: list[str] = []
        for code, until in self.store.hgetall(REGISTRY).items():
            (codes if float(until) > now else gone).append(code)
        if gone:
            self.store.hdel(REGISTRY, *gone)
        return sorted(codes)

    def start(self) -> Teacher:
        """A new class with a fresh code and secret; ClassLimitError when ``max_classes`` run."""
        if len(self.live_codes()) >= self.max_classes:
            raise ClassLimitError(code="class_limit", limit=self.max_classes)
        for _ in range(20):
            code = "".join(secrets.choice(ALPHABET) for _ in range(CODE_LENGTH))
            if self.store.hsetnx(REGISTRY, code, str(self._now() + self.idle_seconds).encode()):
                break
        else:  # pragma: no cover - 31**6 codes
            raise ClassLimitError("No free class code was found; try again.")
        if len(self.live_codes()) > self.max_classes:  # another server started one at the same moment
            self.store.hdel(REGISTRY, code)
            raise ClassLimitError(code="class_limit", limit=self.max_classes)
        secret = secrets.token_urlsafe(24)
        self.store.hset(self._key(code), "secret", _sha(secret))
        self.store.hset(self._key(code), "started", str(self._now()).encode())
        self.store.set(self._key(code, "state"), json.dumps({"version": 0, "page": {}}).encode())
        self._renew(code)
        return Teacher(code, secret)

    def attempt(self, who: str, limit: int, window: float = 60.0) -> bool:
        """Count one try of ``who`` (a client address) in the store, so every server and every reload
        of a page shares the count; False once ``limit`` tries fell within ``window`` seconds."""
        key = f"vz:tries:{_sha(who).hex()[:32]}"
        tries = self.store.incrby(key, 1)
        if tries == 1:
            self.store.expire(key, window)
        return tries <= limit

    def remember_lead(self, browser: str, teacher: Teacher) -> None:
        """The browser ``browser`` (an anonymous id) leads ``teacher``'s class: a reload or a closed tab
        of that browser finds the class again (for as long as the class lives)."""
        self.store.set(f"vz:lead:{_sha(browser).hex()[:32]}", f"{teacher.code}\n{teacher.secret}".encode(),
                       self.idle_seconds)

    def lead_of(self, browser: str) -> Teacher | None:
        """The running class ``browser`` leads, or None (ended, expired, or none)."""
        raw = self.store.get(f"vz:lead:{_sha(browser).hex()[:32]}")
        if raw is None:
            return None
        code, secret = raw.decode().split("\n", 1)
        lead = Teacher(code, secret)
        return lead if self.verify(lead) else None

    def forget_lead(self, browser: str) -> None:
        self.store.delete(f"vz:lead:{_sha(browser).hex()[:32]}")

    def exists(self, code: str) -> bool:
        return self.store.hget(self._key(normalise_code(code)), "secret") is not None

    def _renew(self, code: str) -> None:
        """The teacher is here: every key of the class lives ``idle_seconds`` more."""
        for key in self._keys(code):
            self.store.expire(key, self.idle_seconds)
        self.store.hset(REGISTRY, code, str(self._now() + self.idle_seconds).encode())

    def authorize(self, teacher: Teacher, number: int) -> None:
        """Check one teacher action: the class exists, the secret is its secret, ``number`` is fresh
        and not used before. Raises UnknownClassError or NotTeacherError."""
        stored = self.store.hget(self._key(teacher.code), "secret")
        if stored is None:
            raise UnknownClassError(f"Class {teacher.code} has ended or never existed.", "class_unknown",
                                    class_code=teacher.code)
        if not hmac.compare_digest(stored, _sha(teacher.secret)):
            raise NotTeacherError(code="class_not_teacher", class_code=teacher.code)
        if abs(self._now() - number / 1e9) > ACTION_WINDOW:
            raise NotTeacherError("That teacher action is too old to be taken (a replay?); do it again.",
                                  "class_replayed")
        if not self.store.hsetnx(self._key(teacher.code, "actions"), str(number), b"1"):
            raise NotTeacherError("That teacher action was taken already (a replay?); do it again.",
                                  "class_replayed")

    def verify(self, teacher: Teacher) -> bool:
        """Whether ``teacher`` holds the secret of a running class (a teacher link opened)."""
        stored = self.store.hget(self._key(teacher.code), "secret")
        return stored is not None and hmac.compare_digest(stored, _sha(teacher.secret))

    def end(self, teacher: Teacher, number: int | None = None) -> None:
        """End the class: everything it held is dropped."""
        self.authorize(teacher, number or action_number())
        keys = self._keys(teacher.code)
        self.store.delete(*keys)
        self.store.hdel(REGISTRY, teacher.code)

    # --- what the teacher shows -----------------------------------------------------------------
    def publish(self, teacher: Teacher, page: dict[str, Any], photo: bytes | None = None,
                number: int | None = None) -> ClassState:
        """The teacher's page as the class follows it (and the photo, when given: it replaces the
        class's photo)."""
        number = number or action_number()
        self.authorize(teacher, number)
        if photo is not None:
            self.store.set(self._key(teacher.code, "photo"), photo, self.idle_seconds)
        state = {"version": number, "page": page}
        self.store.set(self._key(teacher.code, "state"), json.dumps(state).encode(), self.idle_seconds)
        self._renew(teacher.code)
        return ClassState(teacher.code, number, page)

    def share_model(self, teacher: Teacher, blob: bytes, number: int | None = None) -> None:
        """A model the teacher taught (its new last layer and class names, a few kilobytes), so that a
        student whose server does not hold it can use it; it replaces the one shared before."""
        self.authorize(teacher, number or action_number())
        if len(blob) > MAX_MODEL_BYTES:
            raise ClassError(code="class_model_large", most=MAX_MODEL_BYTES // 1_000_000)
        self.store.set(self._key(teacher.code, "model"), blob, self.idle_seconds)

    def shared_model(self, code: str) -> bytes | None:
        """The model the teacher shared last (see :meth:`share_model`), or None."""
        return self.store.get(self._key(normalise_code(code), "model"))

    def touch(self, teacher: Teacher) -> None:
        """The teacher is still here (the page calls this while the teacher's tab is open)."""
        if not self.verify(teacher):
            raise NotTeacherError(code="class_not_teacher", class_code=teacher.code)
        self._renew(teacher.code)

    def state(self, code: str) -> ClassState:
        """What the class shows now; UnknownClassError for an unknown, ended or expired code."""
        code = normalise_code(code)
        raw = self.store.get(self._key(code, "state"))
        if raw is None or not self.exists(code):
            raise UnknownClassError(code="class_unknown", class_code=code)
        state = json.loads(raw)
        return ClassState(code, int(state["version"]), dict(state["page"]))

    def photo(self, code: str) -> bytes | None:
        return self.store.get(self._key(normalise_code(code), "photo"))

    # --- followers ------------------------------------------------------------------------------
    def follow(self, code: str, session: str) -> None:
        """A student's page follows the class (called on each of its checks: a heartbeat)."""
        self.store.hset(self._key(normalise_code(code), "followers"), session, str(self._now()).encode())
        self.store.expire(self._key(normalise_code(code), "followers"), self.idle_seconds)

    def unfollow(self, code: str, session: str) -> None:
        self.store.hdel(self._key(normalise_code(code), "followers"), session)

    def followers(self, code: str) -> int:
        """Students heard from within the last FOLLOW_SECONDS."""
        now = self._now()
        heard = self.store.hgetall(self._key(normalise_code(code), "followers"))
        gone = [s for s, when in heard.items() if now - float(when) > FOLLOW_SECONDS]
        if gone:
            self.store.hdel(self._key(normalise_code(code), "followers"), *gone)
        return len(heard) - len(gone)

    # --- polls ----------------------------------------------------------------------------------
    def answer(self, code: str, question: str, session: str, choice: int) -> None:
        """A student's answer to ``question``: one per session, a new one replaces the old."""
        code = normalise_code(code)
        if not self.exists(code):
            raise UnknownClassError(code="class_unknown", class_code=code)
        self.store.hset(self._key(code, "answers"), f"{question}|{session}", str(int(choice)).encode())
        self.store.expire(self._key(code, "answers"), self.idle_seconds)  # answers end with their class

    def my_answer(self, code: str, question: str, session: str) -> int | None:
        raw = self.store.hget(self._key(normalise_code(code), "answers"), f"{question}|{session}")
        return None if raw is None else int(raw)

    def totals(self, code: str, question: str, choices: int) -> list[int]:
        """How many chose each of the ``choices`` of ``question``."""
        counts = [0] * choices
        for key, value in self.store.hgetall(self._key(normalise_code(code), "answers")).items():
            if key.split("|", 1)[0] == question and 0 <= int(value) < choices:
                counts[int(value)] += 1
        return counts

    def totals_csv(self, code: str, questions: Sequence[tuple[str, Sequence[str]]]) -> str:
        """The totals of every poll as CSV (question, choice, answers): counts only, nobody's name."""
        out = io.StringIO()
        writer = csv.writer(out)
        writer.writerow(["question", "choice", "answers"])
        for question, labels in questions:
            for label, count in zip(labels, self.totals(code, question, len(labels)), strict=True):
                writer.writerow([question, label, count])
        return out.getvalue()

    # --- the gallery ----------------------------------------------------------------------------
    def send_photo(self, code: str, data: bytes) -> str:
        """A student's photo into the class gallery, through the same checks as an upload
        (InvalidImageError); ClassLimitError when the gallery is full. Returns the photo's id (the
        same photo sent twice is kept once)."""
        code = normalise_code(code)
        if not self.exists(code):
            raise UnknownClassError(code="class_unknown", class_code=code)
        load_image(data)  # the upload's checks: format, size, pixels
        pid = hashlib.sha256(data).hexdigest()[:16]
        index = self._key(code, "gallery")
        if self.store.hget(index, pid) is not None:
            return pid
        if len(self.store.hgetall(index)) >= self.max_photos:
            raise ClassLimitError(code="gallery_full_photos", limit=self.max_photos)
        total = self.store.incrby(self._key(code, "gallery_bytes"), len(data))
        if total > self.max_gallery_bytes:
            self.store.incrby(self._key(code, "gallery_bytes"), -len(data))
            raise ClassLimitError(code="gallery_full_mb", limit=f"{self.max_gallery_bytes / 1e6:g}")
        self.store.set(self._key(code, f"gallery:{pid}"), data, self.idle_seconds)
        if not self.store.hsetnx(index, pid, str(self._now()).encode()):  # the same photo, at the same moment
            self.store.incrby(self._key(code, "gallery_bytes"), -len(data))
        for key in (index, self._key(code, "gallery_bytes")):
            self.store.expire(key, self.idle_seconds)
        return pid

    def gallery(self, code: str) -> list[GalleryPhoto]:
        """The class's photos, oldest first (a photo whose bytes are gone is left out)."""
        code = normalise_code(code)
        photos = []
        for pid, sent in self.store.hgetall(self._key(code, "gallery")).items():
            data = self.store.get(self._key(code, f"gallery:{pid}"))
            if data is not None:
                photos.append(GalleryPhoto(pid, data, float(sent)))
        return sorted(photos, key=lambda p: (p.sent, p.id))

    def gallery_size(self, code: str) -> int:
        """How many photos the class gallery holds (its index only: no photo is read)."""
        return len(self.store.hgetall(self._key(normalise_code(code), "gallery")))

    def gallery_photo(self, code: str, pid: str) -> bytes | None:
        return self.store.get(self._key(normalise_code(code), f"gallery:{pid}"))


def open_store(url: str | None) -> Store:
    """The store a server's classes live in: ``None`` or ``""`` -> in this process; ``redis://...`` ->
    Redis, reached once now so an unreachable one is said at start (StoreUnavailableError), never
    silently replaced by a store the other servers cannot see."""
    if not url:
        return MemoryStore()
    if not url.startswith(("redis://", "rediss://", "unix://")):
        raise ValueError(f"VIZHOOKS_CLASS_STORE={url!r} is not a Redis URL; use redis://host:port/0 "
                         "or leave it unset for a store in this process.")
    from vizhooks.classroom.redis_store import RedisStore

    store = RedisStore(url)
    store.ping()
    return store
