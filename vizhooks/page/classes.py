"""A class on the page: the teacher's panel, students who follow, polls and the class gallery, over
vizhooks.classroom (the class logic) and its store (this process, or Redis with VIZHOOKS_CLASS_STORE).

A session is in at most one class, in one of two roles, kept in its session state:

- ``_class_teacher``: the :class:`~vizhooks.classroom.Teacher` (code and secret) of a class it leads.
  Its page publishes what it shows whenever that changes (:func:`publish`).
- ``_class_code``: the class it follows as a student; ``_class_following`` False after "Explore on my
  own". A follower applies the teacher's page before the sidebar draws (:func:`apply_teacher`), and a
  fragment checks the class every second, rerunning the page when the teacher changed something.

Students are anonymous: the store knows a session by a random id kept in its session state.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import threading
from html import escape
from typing import Any
from urllib.parse import urlencode

import streamlit as st

from vizhooks.analysis import image_digest
from vizhooks.classroom import (
    ClassError,
    Classroom,
    StoreUnavailableError,
    Teacher,
    UnknownClassError,
    open_store,
)
from vizhooks.page.errors import reason, store_back, store_down
from vizhooks.page.present import chart_for_screen
from vizhooks.page.taught import head_blob, is_taught, keep_blob, names_of
from vizhooks.page.texts import t, use_session_language

#: The session-state keys a follower takes from the teacher's page (language stays the student's own).
FOLLOWED = ("model", "layers", "what", "size", "channels", "order", "cmap", "norm", "columns", "view",
            "lesson_step", "lesson_plan", "target", "present")
CHECK_SECONDS = 0.5  # how often a follower's page asks the class for news
TEACHER_SECONDS = 2.0  # how often the teacher's panel counts followers
PASSPHRASE_TRIES = 3  # per client address and minute, counted in the class store

_room: Classroom | None = None
_room_lock = threading.Lock()


def _env_int(name: str, default: int) -> int:
    try:
        return int(float(os.environ.get(name, default)))
    except ValueError:
        return default


def classroom() -> Classroom:
    """The server's classes, in the store VIZHOOKS_CLASS_STORE names (made once per process; an
    unreachable Redis raises StoreUnavailableError now and is tried again on the next call)."""
    global _room
    with _room_lock:
        if _room is None:
            store = open_store(os.environ.get("VIZHOOKS_CLASS_STORE", ""))
            _room = Classroom(store, max_classes=_env_int("VIZHOOKS_MAX_CLASSES", 20),
                              idle_seconds=60 * _env_int("VIZHOOKS_CLASS_IDLE_MINUTES", 10),
                              max_photos=_env_int("VIZHOOKS_GALLERY_PHOTOS", 60),
                              max_gallery_bytes=_env_int("VIZHOOKS_GALLERY_MB", 60) * 1_000_000)
        return _room


def reset() -> None:
    """Forget the server's class store object (tests; a changed VIZHOOKS_CLASS_STORE)."""
    global _room
    with _room_lock:
        _room = None


def class_counts() -> tuple[int, int] | None:
    """(classes running, students following) for /metrics; None when the store is unreachable (the
    reason goes to the log), so /metrics says the store is down instead of "0 classes"."""
    try:
        room = classroom()
        codes = room.live_codes()
        counts = len(codes), sum(room.followers(code) for code in codes)
    except (StoreUnavailableError, ValueError) as exc:
        store_down(exc)
        return None
    store_back()
    return counts


def session_id() -> str:
    """This session's anonymous id in the class store."""
    return st.session_state.setdefault("_class_sid", secrets.token_hex(8))


def browser_id() -> str:
    """This browser's anonymous id: a digest of the token in Streamlit's own XSRF cookie, which every
    session of one browser sends and a reload keeps (the cookie's value is re-masked on each load, the
    token inside it is not). One browser is one voter, one follower, and finds the class it leads after a
    reload. Without the cookie (XSRF protection off, AppTest) the session's id."""
    raw = st.context.cookies.get("_streamlit_xsrf") if hasattr(st.context, "cookies") else None
    if not isinstance(raw, str) or not raw:
        return session_id()
    return "b" + hashlib.sha256(xsrf_token(raw)).hexdigest()[:24]


def xsrf_token(cookie: str) -> bytes:
    """The token inside an XSRF cookie's value: Tornado's version 2 (``2|mask|masked token|time``) is
    unmasked (each load masks it anew); any other value is its own token."""
    parts = cookie.split("|")
    try:
        if len(parts) == 4 and parts[0] == "2":
            mask, masked = bytes.fromhex(parts[1]), bytes.fromhex(parts[2])
            return bytes(b ^ mask[i % 4] for i, b in enumerate(masked))
    except ValueError:
        pass
    return cookie.encode()


def teacher() -> Teacher | None:
    return st.session_state.get("_class_teacher")


def following() -> str | None:
    """The code of the class this session follows now (None when teaching, detached or in none)."""
    code = st.session_state.get("_class_code")
    return code if code and st.session_state.get("_class_following", False) else None


def student_code() -> str | None:
    """The class this session is a student of, following or not."""
    return st.session_state.get("_class_code")


# --- joining: a class link or a teacher link ----------------------------------------------------

def join_from_link() -> None:
    """First run of a session opened with ``?class=CODE`` (follow) or ``&teacher=SECRET`` (lead)."""
    link = st.session_state.pop("_class_link", None)
    if not link or not link[0]:
        if link is not None:  # a session's first run without a class link: a reload of the teacher's page?
            _reclaim()
        return
    code, secret = link
    try:
        room = classroom()
        if secret and room.verify(Teacher(code, secret)):
            _lead(Teacher(code, secret), adopt=True)
            return
        if not room.exists(code):
            st.session_state["_class_notice"] = t("class_unknown", code=code)
            return
        if secret:  # a teacher link with a wrong or old secret: say so, then follow as a student
            st.session_state["_class_notice"] = t("class_forged_teacher", code=code)
    except StoreUnavailableError as exc:
        store_down(exc)
        st.session_state["_class_notice"] = t("class_store_start")
        return
    st.session_state["_class_code"] = code
    st.session_state["_class_following"] = True


def _lead(lead: Teacher, adopt: bool) -> None:
    """This session leads ``lead``'s class; a page that joins a running class (a reload, the teacher link
    on a second device) first takes the class's page as it is, so it does not reset the students."""
    st.session_state["_class_teacher"] = lead
    st.session_state["_class_adopt"] = adopt
    try:
        classroom().remember_lead(browser_id(), lead)
    except StoreUnavailableError as exc:
        store_down(exc)


def _reclaim() -> None:
    """The class this browser led before a reload or a closed tab, if it still runs."""
    try:
        lead = classroom().lead_of(browser_id())
    except StoreUnavailableError as exc:
        store_down(exc)
        return
    if lead is not None:
        _lead(lead, adopt=True)
        st.session_state["_class_notice"] = t("class_reclaimed", code=lead.code)


def _adopt(lead: Teacher) -> None:
    """Take the class's page (and its photo) into this teacher session: the last action of any of the
    teacher's pages wins, and every one of them shows it."""
    try:
        state = classroom().state(lead.code)
    except UnknownClassError:
        _leave(t("class_ended", code=lead.code))
        return
    except StoreUnavailableError as exc:
        store_down(exc)
        return
    page = state.page
    for key in FOLLOWED:
        if key in page:
            st.session_state[key] = page[key] if key != "layers" else list(page[key])
    st.session_state["_class_published"] = page
    st.session_state["_class_version"] = state.version
    st.session_state["_class_lead_photo"] = _photo_choice()  # the class's photo until this page picks another


def _photo_choice() -> tuple:
    """What this session's sidebar says of its photo: a change means the teacher picked another."""
    upload = st.session_state.get("upload")
    camera = st.session_state.get("camera")
    return (st.session_state.get("source"), st.session_state.get("sample"),
            getattr(upload, "file_id", None), getattr(camera, "file_id", None))


# --- following ------------------------------------------------------------------------------------

def apply_teacher() -> None:
    """A follower's page takes the teacher's latest page (before any widget is drawn); so does a teacher
    page that joined a running class, or whose other page (another device, another tab) acted."""
    lead = teacher()
    if lead is not None and st.session_state.pop("_class_adopt", False):
        _adopt(lead)
    code = following()
    if code is None:
        return
    if _changed_by_follower():  # the student moved on their own: no longer "following the teacher"
        _detach()
        st.session_state["_class_notice"] = t("class_detached_own", code=code)
        return
    try:
        state = classroom().state(code)
    except UnknownClassError:
        _leave(t("class_ended", code=code))
        return
    except StoreUnavailableError as exc:
        store_down(exc)
        st.session_state["_class_down"] = True
        return
    st.session_state.pop("_class_down", None)
    if state.version == st.session_state.get("_class_version"):
        return
    page = state.page
    if is_taught(str(page.get("model", ""))) and not names_of(page["model"]):  # taught on another server
        blob = classroom().shared_model(code)
        if blob is None or keep_blob(blob) != page["model"]:
            page = {k: v for k, v in page.items() if k != "model"}  # gone everywhere: the student keeps their own
    for key in FOLLOWED:
        if key in page:
            st.session_state[key] = page[key] if key != "layers" else list(page[key])
    st.session_state["_class_page"] = page
    st.session_state["_class_version"] = state.version


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, (list, tuple)) else value


def _changed_by_follower() -> bool:
    """Whether a following student changed something the teacher leads since the last run ended (the
    page's own normalising happens within a run, before :func:`note_follower_page`)."""
    seen: dict[str, Any] = st.session_state.get("_class_seen") or {}
    return any(_plain(st.session_state.get(k)) != v for k, v in seen.items())


def note_follower_page() -> None:
    """What a follower's page shows of the teacher's choices, once the run has drawn its sidebar."""
    if following():
        st.session_state["_class_seen"] = {k: _plain(st.session_state.get(k)) for k in FOLLOWED}
    else:
        st.session_state.pop("_class_seen", None)


def page_moved(key: str) -> None:
    """The page itself changed the followed choice ``key`` in this run (the lesson moving to its plan's
    first step): the student did not, so it does not detach them."""
    seen = st.session_state.get("_class_seen")
    if seen is not None and key in seen:
        seen[key] = _plain(st.session_state.get(key))


def _leave(notice: str) -> None:
    for key in ("_class_code", "_class_following", "_class_version", "_class_page", "_class_photo",
                "_class_teacher", "_class_published", "_class_down"):  # "ended" alone, not "cannot be reached"
        st.session_state.pop(key, None)
    st.session_state["_class_notice"] = notice


def class_photo() -> bytes | None:
    """The teacher's photo while this session follows a class that has one (fetched once per photo); for a
    teacher page that took the class as it was, the class's photo until it picks another."""
    code = following()
    page = st.session_state.get("_class_page") or {}
    lead = teacher()
    if lead is not None and st.session_state.get("_class_lead_photo") is not None:
        if st.session_state["_class_lead_photo"] != _photo_choice():
            st.session_state.pop("_class_lead_photo")
        else:
            code, page = lead.code, st.session_state.get("_class_published") or {}
    digest = page.get("photo")
    if code is None or not digest:
        return None
    kept = st.session_state.get("_class_photo")
    if kept and kept[0] == digest:
        return kept[1]
    try:
        data = classroom().photo(code)
    except StoreUnavailableError:
        return kept[1] if kept else None
    if data is None:
        return None
    st.session_state["_class_photo"] = (image_digest(data), data)
    return data


def followed_photo() -> tuple[bytes, str] | None:
    """The teacher's photo and its file name while this session follows a class that has one: what a
    follower's sidebar shows in place of its own picker, which the class's photo would override."""
    if not following():
        return None
    data = class_photo()
    if data is None:
        return None
    return data, (st.session_state.get("_class_page") or {}).get("photo_name") or ""


def _check_for_news() -> None:
    """A follower's heartbeat, and a rerun of the whole page when the teacher changed something."""
    code = following()
    if code is None:
        return
    try:
        room = classroom()
        room.follow(code, browser_id())
        version = room.state(code).version
    except UnknownClassError:
        _leave(t("class_ended", code=code))
        st.rerun(scope="app")
        return
    except StoreUnavailableError as exc:
        store_down(exc)
        if not st.session_state.get("_class_down"):
            st.session_state["_class_down"] = True
            st.rerun(scope="app")
        return
    if st.session_state.pop("_class_down", None) is not None or version != st.session_state.get("_class_version"):
        st.rerun(scope="app")


@st.fragment(run_every=CHECK_SECONDS)
def _follower_watch() -> None:
    use_session_language()
    _check_for_news()


def _detach() -> None:
    code = student_code()
    st.session_state["_class_following"] = False
    try:
        if code:
            classroom().unfollow(code, browser_id())
    except StoreUnavailableError:
        pass


def _rejoin() -> None:
    st.session_state["_class_following"] = True
    st.session_state.pop("_class_seen", None)
    st.session_state.pop("_class_version", None)  # take the teacher's page again, whatever it is


def class_bar() -> None:
    """The main area's line about the class: notices, following or not, and the student's buttons."""
    notice = st.session_state.pop("_class_notice", None)
    if notice:
        st.info(notice, icon=":material/school:")
    if st.session_state.get("_class_down"):
        st.warning(t("class_store_down"), icon=":material/cloud_off:")
    lead = teacher()
    if lead is not None:  # the teacher's own line, and the code for the projector
        left, right = st.columns([3, 1])
        left.caption(t("class_teaching", code=lead.code, n=_followers(lead.code)))
        if right.button(t("class_show_code"), key="class_show_code", icon=":material/qr_code_2:"):
            _code_panel(lead)
        return
    code = student_code()
    if code is None:
        return
    left, right = st.columns([3, 1])
    if following():
        left.caption(t("class_following", code=code))
        if (st.session_state.get("_class_page") or {}).get("photo"):
            left.caption(t("class_photo_from_teacher"))
        right.button(t("class_detach"), key="class_detach", on_click=_detach)
        _follower_watch()
    else:
        left.caption(t("class_detached", code=code))
        right.button(t("class_rejoin"), key="class_rejoin", on_click=_rejoin)


def _followers(code: str) -> int | str:
    try:
        return classroom().followers(code)
    except StoreUnavailableError as exc:
        store_down(exc)
        return "?"


def _code_panel(lead: Teacher) -> None:
    """A large panel for the projector: the code, the QR code, the student link in full, the count."""
    student = link({"class": lead.code, "lang": st.session_state.get("lang", "en")})

    def body() -> None:
        st.markdown(f'<div style="font-size:7rem;font-weight:700;letter-spacing:0.12em;text-align:center;'
                    f'line-height:1.1">{lead.code}</div>', unsafe_allow_html=True)
        st.image(qr_png(student), width=420, caption=t("class_qr_caption", code=lead.code))
        st.markdown(f'<div style="font-size:1.6rem;word-break:break-all;text-align:center">{escape(student)}</div>',
                    unsafe_allow_html=True)
        st.markdown(f'<div style="font-size:1.4rem;text-align:center">'
                    f'{escape(t("class_panel_count", n=_followers(lead.code)))}</div>', unsafe_allow_html=True)

    st.dialog(t("class_show_code"), width="large")(body)()


def send_photo_button(data: bytes | None) -> None:
    """A student's "Send my photo to the class" (explicit, never automatic), under the predictions."""
    code = student_code()
    if code is None or data is None or following() and class_photo() is not None:
        return  # a follower's photo is the teacher's own: nothing of theirs to send
    if st.button(t("class_send_photo"), key="class_send_photo", help=t("class_send_photo_help")):
        try:
            classroom().send_photo(code, data)
        except (ClassError, StoreUnavailableError, ValueError) as exc:
            st.error(reason(exc))
        else:
            st.success(t("class_photo_sent"))


# --- teaching -------------------------------------------------------------------------------------

def _passphrase_ok() -> bool:
    """Whether the teacher passphrase (VIZHOOKS_TEACHER_KEY, when set) was given, a few tries a minute."""
    key = os.environ.get("VIZHOOKS_TEACHER_KEY", "")
    if not key:
        return True
    # per client address, in the class store: a reload (a new session) or another server starts no new count;
    # on localhost (no address) every visitor shares one count
    address = st.context.ip_address
    try:
        allowed = classroom().attempt(f"passphrase:{address if isinstance(address, str) and address else 'localhost'}",
                                      PASSPHRASE_TRIES)
    except StoreUnavailableError as exc:
        st.session_state["_class_error"] = reason(exc)
        return False
    if not allowed:
        st.session_state["_class_error"] = t("class_too_many_tries")
        return False
    given = st.session_state.get("class_passphrase", "")
    if hmac.compare_digest(given.encode(), key.encode()):
        return True
    st.session_state["_class_error"] = t("class_bad_passphrase")
    return False


def _attempt() -> None:
    """A new try at a class action: the last one's refusal goes. (A refusal stays on the page until then:
    shown only in the run after the click, a rerun right after it, as on a busy server, took it away.)"""
    st.session_state.pop("_class_error", None)


def _start() -> None:
    _attempt()
    if not _passphrase_ok():
        return
    try:
        _lead(classroom().start(), adopt=False)
    except (ClassError, StoreUnavailableError) as exc:
        st.session_state["_class_error"] = reason(exc)
        return
    st.session_state.pop("class_passphrase", None)
    for key in ("_class_code", "_class_following", "_class_version", "_class_page", "_class_published"):
        st.session_state.pop(key, None)  # a student who starts a class leaves the one followed


def _end() -> None:
    _attempt()
    lead = teacher()
    if lead is None:
        return
    try:
        classroom().end(lead)
        classroom().forget_lead(browser_id())
    except (ClassError, StoreUnavailableError) as exc:
        st.session_state["_class_error"] = reason(exc)
        if not isinstance(exc, UnknownClassError):
            return
    _leave(t("class_ended", code=lead.code))


def link(query: dict[str, str]) -> str:
    """This page's address with ``query`` (the server's own URL as the browser reached it)."""
    base = str(getattr(st.context, "url", "") or "").split("?")[0]
    return f"{base}?{urlencode(query)}"


def qr_png(text: str) -> bytes:
    """A QR code of ``text`` as PNG, large enough to scan from the back of a room."""
    import io

    import segno

    out = io.BytesIO()
    segno.make(text, error="m").save(out, kind="png", scale=8, border=2)
    return out.getvalue()


@st.fragment(run_every=TEACHER_SECONDS)
def _teacher_watch(lead: Teacher) -> None:
    use_session_language()
    try:
        room = classroom()
        room.touch(lead)
        room.remember_lead(browser_id(), lead)  # lives as long as the class
        n = room.followers(lead.code)
        photos = room.gallery_size(lead.code)
        version = room.state(lead.code).version
    except ClassError as exc:  # the store lost the class (Redis came back empty): the teacher must start again
        lost = isinstance(exc, UnknownClassError) or not _exists(lead.code)
        st.warning(t("class_lost", code=lead.code) if lost else reason(exc), icon=":material/cloud_off:")
        return
    except StoreUnavailableError as exc:
        store_down(exc)
        st.warning(t("class_store_down_teacher"), icon=":material/cloud_off:")
        return
    st.caption(t("class_followers", n=n))
    mine = st.session_state.get("_class_version")
    if mine is not None and version != mine:  # another page of this teacher acted: the last action wins
        st.session_state["_class_adopt"] = True
        st.rerun(scope="app")
    seen = st.session_state.get("_class_gallery_seen")
    st.session_state["_class_gallery_seen"] = photos  # a full run passes here before the gallery is drawn
    if seen is not None and seen != photos:
        st.rerun(scope="app")  # a student sent a photo: the teacher's gallery shows it


def _exists(code: str) -> bool:
    try:
        return classroom().exists(code)
    except StoreUnavailableError:
        return True  # unknown: say nothing of a lost class


def teacher_panel(slot: Any) -> None:
    """The sidebar's "Teach a class": start one, or the running class's code, link, QR and end."""
    lead = teacher()
    with slot.expander(t("class_header"), expanded=lead is not None, icon=":material/school:"):
        error = st.session_state.get("_class_error")  # until the next try (_attempt)
        if error:
            st.error(error)
        if lead is None:
            st.caption(t("class_intro"))
            if os.environ.get("VIZHOOKS_TEACHER_KEY"):
                st.text_input(t("class_passphrase"), key="class_passphrase", type="password",
                              help=t("class_passphrase_help"))
            st.button(t("class_start"), key="class_start", on_click=_start, type="primary")
            return
        st.markdown(t("class_code", code=lead.code))
        student = link({"class": lead.code, "lang": st.session_state.get("lang", "en")})
        st.caption(t("class_link"))
        st.code(student, language=None)
        st.image(qr_png(student), caption=t("class_qr_caption", code=lead.code), width=220)
        _teacher_watch(lead)
        with st.popover(t("class_teacher_link")):
            st.caption(t("class_teacher_link_help"))
            st.code(link({"class": lead.code, "teacher": lead.secret}), language=None)
        st.button(t("class_end"), key="class_end", on_click=_end)


def publish(data: bytes | None) -> None:
    """The teacher's page, as the class follows it: published when it changed (the photo when its
    digest did). The page is the FOLLOWED choices; the class's own parts (revealed polls, the
    gallery's spotlight) are kept from the last publication."""
    note_follower_page()
    lead = teacher()
    if lead is None:
        return
    last = st.session_state.get("_class_published") or {}
    page = {k: last[k] for k in ("revealed", "spotlight") if k in last}
    for key in FOLLOWED:
        value = st.session_state.get(key)
        page[key] = list(value) if isinstance(value, (list, tuple)) else value
    digest = image_digest(data) if data is not None else None
    page["photo"] = digest
    # the name the take-home files give the photo (the class's while this page shows it)
    page["photo_name"] = last.get("photo_name") if digest == last.get("photo") and last.get("photo_name") \
        else _own_photo_name()
    if page == last:
        return
    try:
        blob = head_blob(page["model"]) if page["model"] != last.get("model") and is_taught(page["model"]) else None
        if blob is not None:  # a model the teacher taught: students on another server need its head
            classroom().share_model(lead, blob)
        state = classroom().publish(lead, page, photo=data if digest != last.get("photo") else None)
    except UnknownClassError:
        _leave(t("class_ended", code=lead.code))
        return
    except ClassError as exc:
        st.warning(reason(exc), icon=":material/cloud_off:")
        return
    except StoreUnavailableError as exc:
        store_down(exc)
        st.warning(t("class_store_down_teacher"), icon=":material/cloud_off:")
        return
    st.session_state["_class_published"] = page
    st.session_state["_class_version"] = state.version  # this page's own action: not news to adopt


def _own_photo_name() -> str:
    """The file name of the photo this page's sidebar holds, as the lesson's code names it."""
    state = st.session_state
    return str(state["sample"]) if state.get("source", "sample") == "sample" and state.get("sample") else "my_photo.jpg"


def class_page() -> dict[str, Any]:
    """The class's page as this session knows it: the teacher's own, or the one followed."""
    if teacher() is not None:
        return dict(st.session_state.get("_class_published") or {})
    return dict(st.session_state.get("_class_page") or {})


def set_class_part(key: str, value: Any) -> None:
    """The teacher changes a class-wide part of the page (revealed polls, the gallery's spotlight)."""
    _attempt()
    lead = teacher()
    if lead is None:
        return
    page = {**class_page(), key: value}
    try:
        state = classroom().publish(lead, page)
    except (ClassError, StoreUnavailableError) as exc:
        st.session_state["_class_error"] = reason(exc)
        return
    st.session_state["_class_published"] = page
    st.session_state["_class_version"] = state.version


# --- the class gallery ----------------------------------------------------------------------------

def ranked(ctx: Any, photos: list[Any], layer: str, channel: int) -> list[tuple[float, Any, Any]]:
    """(mean of the channel's map, photo, its analysis) for every gallery photo, strongest first;
    each photo's forward pass goes through the page's shared result cache."""
    from vizhooks.page.results import get_analysis

    c = ctx.choices
    scored = []
    for photo in photos:
        analysis = get_analysis(c.model, image_digest(photo.data), photo.data, c.size, (layer,), c.what)
        scored.append((float(analysis.activations[layer][0, channel].float().mean()), photo, analysis))
    return sorted(scored, key=lambda item: (-item[0], item[1].sent))


def _show_ranking(ctx: Any, photos: list[Any], layer: str, channel: int, columns: int = 4) -> None:
    from vizhooks.render.figures import channel_overlay

    st.caption(t("gallery_intro", layer=layer, channel=channel))
    cells = st.columns(columns)
    for rank, (score, _photo, analysis) in enumerate(ranked(ctx, photos, layer, channel), start=1):
        cells[(rank - 1) % columns].image(
            channel_overlay(analysis.picture, analysis.activations[layer][0, channel], 0.5, ctx.choices.cmap),
            caption=t("gallery_score", rank=rank, score=score), width="stretch")


def gallery_panel(ctx: Any) -> None:
    """The teacher's class gallery (photos sorted by one channel, shown to everyone on demand), and a
    follower's view of it while the teacher shows it."""
    lead = teacher()
    code = lead.code if lead is not None else following()
    if code is None:
        return
    spotlight: dict[str, Any] = class_page().get("spotlight") or {}
    if lead is None and not spotlight:
        return
    try:
        photos = classroom().gallery(code)
    except StoreUnavailableError:
        return
    if lead is None:  # a follower, while the teacher shows the gallery
        layer, channel = spotlight["layer"], int(spotlight["channel"])
        if layer in ctx.analysis.activations and photos:
            st.info(t("gallery_shown", layer=layer, channel=channel), icon=":material/photo_library:")
            _show_ranking(ctx, photos, layer, channel)
        return
    with st.expander(t("gallery_header", n=len(photos)), expanded=bool(spotlight), icon=":material/photo_library:"):
        if not photos:
            st.caption(t("gallery_empty"))
            return
        layers = list(ctx.choices.layers)
        if not layers:
            st.caption(t("gallery_no_layers"))
            return
        left, right, button = st.columns([2, 1, 1], vertical_alignment="bottom")
        layer = left.selectbox(t("gallery_layer"), layers, key="gallery_layer")
        channels = int(ctx.analysis.activations[layer].shape[1])
        channel = int(right.number_input(t("gallery_channel"), 0, channels - 1, key="gallery_channel"))
        if spotlight:
            shown = {"layer": layer, "channel": channel}
            if spotlight != shown:  # shown to everyone: the class follows the teacher's next layer or channel
                set_class_part("spotlight", shown)
            button.button(t("gallery_hide"), key="gallery_hide", on_click=set_class_part, args=("spotlight", None))
        else:
            button.button(t("gallery_show"), key="gallery_show", on_click=set_class_part,
                          args=("spotlight", {"layer": layer, "channel": channel}))
        _show_ranking(ctx, photos, layer, channel)


# --- polls: the lesson's questions, answered by the class ------------------------------------------

def poll_choices(step_id: str) -> list[str]:
    """The choices of a lesson step's question, in the page's language."""
    from vizhooks.page.texts import EN

    return [t(key) for n in range(1, 7) if (key := f"lesson_{step_id}_c{n}") in EN]


def poll_questions(plan: tuple[int, ...] = ()) -> list[tuple[str, list[str]]]:
    """The polls of the lesson plan's steps (step numbers; empty: the whole lesson), in the plan's order,
    as (step id, its choices) in the page's language."""
    from vizhooks.lesson.steps import plan_steps

    return [(step.id, poll_choices(step.id)) for step in plan_steps(plan)]


def polls_csv(code: str, questions: list[tuple[str, list[str]]] | None = None) -> str:
    """Every lesson poll's totals as CSV (counts only), in the page's language; ``questions`` (from
    :func:`poll_questions`) where the caller runs outside the page's run and has no language set."""
    return classroom().totals_csv(code, poll_questions() if questions is None else questions)


def _reveal(step_id: str) -> None:
    revealed = list(class_page().get("revealed") or [])
    set_class_part("revealed", [*revealed, step_id] if step_id not in revealed else revealed)


@st.fragment(run_every=TEACHER_SECONDS)
def _poll_totals(code: str, step_id: str) -> None:
    use_session_language()
    choices = poll_choices(step_id)
    try:
        totals = classroom().totals(code, step_id, len(choices))
    except StoreUnavailableError as exc:
        store_down(exc)
        st.warning(t("class_store_down_teacher"), icon=":material/cloud_off:")
        return
    # The CSV is made here, with the chart, so it holds the totals the chart shows. Not a deferred
    # download: Streamlit keeps a file made on the click only until two script runs of ANY session
    # have ended, and a class's followers run every half second, so the click's file was often gone
    # before the browser asked for it (a cancelled download). A file made in the run stays until the
    # next one; unchanged totals give the same file.
    try:
        csv: str | None = polls_csv(code, poll_questions(tuple(st.session_state.get("lesson_plan") or ())))
    except StoreUnavailableError:
        csv = None
    # The button is sent before the totals it holds are drawn above it: a teacher who sees a new count
    # and clicks at once gets that count (drawn the other way round, the click could land on the
    # previous run's button in the moment between the two).
    shown = st.container()
    if csv is not None:
        st.download_button(t("poll_csv"), csv, file_name=f"class-{code}-polls.csv", mime="text/csv",
                           key="poll_csv", on_click="ignore")
    with shown:
        if not sum(totals):  # no chart of zeros (its axis read "0.000000")
            st.caption(t("poll_none_yet"))
        else:
            st.caption(t("poll_totals", n=sum(totals)))
            # letters on the axis (whole choices were cut off there), the choices in full under the chart
            letters = [chr(65 + i) for i in range(len(choices))]
            st.altair_chart(_poll_chart(letters, totals), width="stretch")
            st.caption("  \n".join(f"**{letter}.** {text}" for letter, text in zip(letters, choices, strict=True)))


def _poll_chart(letters: list[str], totals: list[int]) -> Any:
    """A poll's answers as horizontal bars, a choice's letter beside each (whole numbers on the count axis);
    in present mode in the body's type, as the class reads it off the projector."""
    import altair as alt
    import pandas as pd

    frame = pd.DataFrame({"choice": letters, "answers": totals})
    chart = alt.Chart(frame).mark_bar().encode(
        y=alt.Y("choice:N", sort=letters, title=t("poll_choice_axis")),
        x=alt.X("answers:Q", title=t("poll_answers_axis"), axis=alt.Axis(tickMinStep=1, format="d")),
        tooltip=[alt.Tooltip("choice:N", title=t("poll_choice_axis")),
                 alt.Tooltip("answers:Q", title=t("poll_answers_axis"))]).properties(height=36 * len(letters))
    return chart_for_screen(chart)


def _send_answer(code: str, step_id: str) -> None:
    choice = st.session_state.get(f"poll_{step_id}")
    if choice is None:
        return
    before = st.session_state.get(f"_poll_sent_{step_id}")
    try:
        classroom().answer(code, step_id, browser_id(), int(choice))
    except (ClassError, StoreUnavailableError) as exc:
        st.session_state["_poll_error"] = reason(exc)
        return
    st.session_state[f"_poll_sent_{step_id}"] = int(choice)
    st.session_state[f"_poll_changed_{step_id}"] = before is not None and before != int(choice)


def poll(step_id: str) -> bool:
    """The lesson step's question as the class's poll; False outside a class (the page then shows
    the question and its answer as always)."""
    lead = teacher()
    code = lead.code if lead is not None else student_code()
    choices = poll_choices(step_id)
    if code is None or not choices:
        return False
    from vizhooks.page.texts_polls import CORRECT

    correct = CORRECT[step_id]
    revealed = step_id in (class_page().get("revealed") or [])
    st.markdown(f"**{t('poll_header')}** · {t(f'lesson_{step_id}_q')}")
    if lead is not None:
        _poll_totals(code, step_id)
        if revealed:
            st.success(t("poll_revealed", choice=choices[correct]))
        else:
            st.button(t("poll_reveal"), key=f"poll_reveal_{step_id}", on_click=_reveal, args=(step_id,))
        return True
    sent = st.session_state.get(f"_poll_sent_{step_id}")
    if sent is None:  # a reload of this browser: its answer is in the store
        try:
            sent = classroom().my_answer(code, step_id, browser_id())
        except StoreUnavailableError as exc:
            store_down(exc)
        if sent is not None:
            st.session_state[f"_poll_sent_{step_id}"] = sent
    st.radio(t("poll_your_answer"), range(len(choices)), key=f"poll_{step_id}", index=sent,
             format_func=lambda i: f"{chr(65 + i)}. {choices[i]}", disabled=revealed)
    error = st.session_state.pop("_poll_error", None)
    if error:
        st.error(error)
    if revealed:
        st.success(t("poll_revealed", choice=choices[correct]))
        if sent is not None:
            st.caption(t("poll_correct") if sent == correct else t("poll_wrong"))
        return True
    st.button(t("poll_send"), key=f"poll_send_{step_id}", on_click=_send_answer, args=(code, step_id))
    if sent is not None:
        st.caption(t("poll_changed") if st.session_state.get(f"_poll_changed_{step_id}") else t("poll_sent"))
    return True


def answer_hidden(step_id: str) -> bool:
    """Whether a lesson answer stays hidden: for a student of a class, until the teacher reveals it."""
    if teacher() is not None or student_code() is None or not poll_choices(step_id):
        return False
    return step_id not in (class_page().get("revealed") or [])
