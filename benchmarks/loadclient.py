"""A headless visitor of the page: Streamlit's own websocket protocol, no browser.

One :class:`Session` costs the server what one browser tab costs it: the two HTTP requests the
page's connection makes before it opens the websocket (``/_stcore/health`` and
``/_stcore/host-config``, which also hand out the XSRF cookie), one websocket on
``/_stcore/stream`` with the XSRF token as its second subprotocol (as the page sends it), the
``rerun_script`` BackMsgs the page sends (query string, widget states, page hash, the browser's
context: locale, time zone, URL), the file-upload flow (``file_urls_request`` BackMsg ->
``file_urls_response`` ForwardMsg -> HTTP PUT of a multipart form -> the uploader widget's
``file_uploader_state_value`` in the next rerun) and an HTTP GET of every picture (``/media/...``)
a run shows, as the page's ``<img>`` tags do: once per URL and session (Streamlit's media URLs
name their content; a page keeps the pictures it loaded and shows one again without a request,
the HTML standard's "list of available images"). The query string follows the page as the
browser's address bar does (``page_info_changed``). It skips rendering, and by default the page's
HTML and its static bundles (content-hashed, uncompressed, served ``immutable`` from files: a
browser that has visited once keeps them); ``assets=True`` fetches the HTML and every file it
names (about 60; the bundles then load some 55 more chunks on their own, which are not fetched).

Nothing the server sends needs an answer: a ForwardMsg that the client already holds comes as a
``ref_hash`` only when the client lists its hash in ``cached_message_hashes``; this client lists
the cacheable messages it kept, as the page does, and resolves their references.

With ``auto_rerun=True`` the client keeps the page's ``run_every`` timers as the browser's App does:
an ``auto_rerun`` ForwardMsg (interval, fragment id) arms a timer for that fragment (armed again
with the same interval, it keeps its countdown), each tick sends a ``rerun_script`` BackMsg with
the fragment's id and ``is_auto_rerun``, a full run's ``new_session`` clears every timer (the run
arms them again), and ``stop_auto_rerun`` clears the ones it names. A fragment's own run is not a
page run (its elements are kept apart); a full run the server starts without a request of this
client (a fragment's ``st.rerun(scope="app")``) is recorded in ``runs`` with ``origin="server"``
and its finish time.

A rerun carries the widget values this visitor has set so far (the server keeps every other
widget's value from the previous run, so the outcome is the one a browser gets; a browser also
repeats the values it never changed, a few hundred bytes).

Example::

    async with Session("http://127.0.0.1:8501", query="layers=conv1") as s:
        run = s.first_run                      # opened with the query string, finished
        run = await s.set_widget("source", "Upload")
        run = await s.upload("upload", "cat.jpg", data)
        print(run.seconds, run.errors, run.images)
"""

from __future__ import annotations

import asyncio
import itertools
import re
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx2
import websockets
from streamlit.proto.Alert_pb2 import Alert
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ClientState_pb2 import ClientState
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

XSRF_COOKIE = "_streamlit_xsrf"
ID_PREFIX = "$$ID-"  # widget ids are "$$ID-<hash>-<user key>" (streamlit.runtime.state.common)
RUN_TIMEOUT_S = 600.0
HTTP_TIMEOUT_S = 120.0

#: The WidgetState field a browser fills for each widget kind (the frontend's widget components).
VALUE_FIELD = {
    "radio": "string_value", "selectbox": "string_value", "text_input": "string_value",
    "text_area": "string_value", "multiselect": "string_array_value", "button_group": "string_array_value",
    "slider": "double_array_value", "checkbox": "bool_value", "button": "trigger_value",
}
OPTION_KINDS = ("radio", "selectbox", "multiselect", "button_group")
#: What the page's HTML makes a browser load: its script, module preloads, style sheet and icon.
ASSET = re.compile(r'<(?:script[^>]*\ssrc|link[^>]*rel="(?:modulepreload|stylesheet|shortcut icon)"[^>]*\shref)'
                   r'="\./([^"]+)"')


class LoadClientError(RuntimeError):
    """The server refused or broke off something this client asked for."""


@dataclass
class Widget:
    """A widget of the last run: its id, its element kind (``"radio"``...) and its proto."""

    id: str
    kind: str
    proto: Any

    @property
    def options(self) -> list[str]:
        """The labels the page shows for an option widget (what the browser sends back)."""
        return [getattr(o, "content", o) for o in getattr(self.proto, "options", ())]


@dataclass
class Run:
    """One script run as the server sent it, from the rerun request to ``script_finished``.

    seconds: from sending the request (the rerun BackMsg; for an upload, the
        ``file_urls_request``) to the run's ``script_finished``; None if it never came.
    status: "ok", "compile_error", "timeout" or "disconnected"; "interrupted" (an st.rerun ended it
        for a run that is not its own) or "closed" (the visitor left while it ran).
    elements: ``(kind, proto)`` of every element the run sent, in arrival order.
    errors: an exception element's or error alert's text, a compile error, a failed picture GET.
    images: the URLs of the pictures the run showed; media_bytes: the sizes of those it fetched
        (a picture the session had fetched already is not fetched again).
    origin: "request" (this client asked for it) or "server" (the server started it on its own, e.g.
        a fragment's ``st.rerun(scope="app")``: ``started`` is then its ``new_session``'s arrival).
    finished: the ``time.perf_counter()`` at its ``script_finished``; None if it never came.
    """

    started: float
    seconds: float | None = None
    status: str = "running"
    origin: str = "request"
    finished: float | None = None
    elements: list[tuple[str, Any]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    images: list[str] = field(default_factory=list)
    media_bytes: dict[str, int] = field(default_factory=dict)
    media_seconds: float | None = None  # request to the last picture fetched

    @property
    def ok(self) -> bool:
        return self.status == "ok" and not self.errors

    def texts(self, kind: str) -> list[str]:
        """The text of every element of ``kind``: heading/markdown/alert/code bodies, progress texts."""
        out = []
        for k, proto in self.elements:
            if k == kind:
                out.append(getattr(proto, "body", None) or getattr(proto, "text", None) or "")
        return out


def _ws_url(base: str) -> str:
    parts = urlsplit(base)
    scheme = {"http": "ws", "https": "wss"}.get(parts.scheme)
    if scheme is None:
        raise ValueError(f"the server URL must start with http:// or https://, not {base!r}")
    return urlunsplit((scheme, parts.netloc, parts.path.rstrip("/") + "/_stcore/stream", "", ""))


def _match_option(widget: Widget, value: str | int) -> str:
    """The label to send for ``value``: an index, a label, or a label's first word (``"conv1"``
    for ``"conv1 · conv 1 of 20 · ..."``) when exactly one label starts with it."""
    options = widget.options
    if isinstance(value, int):
        if not 0 <= value < len(options):
            raise ValueError(f"option index {value} is outside the {len(options)} options of {widget.id!r}")
        return options[value]
    if value in options:
        return value
    starts = [o for o in options if o.startswith(value + " ")]
    if len(starts) == 1:
        return starts[0]
    raise ValueError(f"{value!r} is not one of the options of {widget.id!r}: {options}; pass a label or an index")


class Session:
    """One visitor: a websocket session on the page, driven from asyncio.

    Args:
        url: the server, e.g. ``"http://127.0.0.1:8501"``.
        query: the page's query string, without ``?`` (``"layers=conv1&view=maps"``).
        locale: the browser's language (the page picks its language from it without ``?lang=``).
        fetch_media: GET every picture a run shows, as the browser's ``<img>`` tags do.
        run_timeout: seconds one run may take before it counts as ``"timeout"``.
        assets: first GET the page's HTML and the static files it names, as a first visit does.
        auto_rerun: keep the page's ``run_every`` timers and send their reruns, as a browser does.

    ``async with Session(...) as s`` connects and waits for the first run (``s.first_run``).
    """

    def __init__(self, url: str, query: str = "", *, locale: str = "en-US", fetch_media: bool = True,
                 run_timeout: float = RUN_TIMEOUT_S, assets: bool = False, auto_rerun: bool = False) -> None:
        self.url = url.rstrip("/")
        self.query = query.removeprefix("?")
        self.locale = locale
        self.fetch_media = fetch_media
        self.run_timeout = run_timeout
        self.assets = assets
        self.auto_rerun = auto_rerun
        self.auto_reruns_sent = 0  # rerun BackMsgs sent by run_every timers
        self.fragment_runs = 0  # fragment runs the server finished
        self.fragment_errors: list[str] = []  # errors shown by fragment runs
        self.finishes_missing = 0  # runs whose script_finished never came (ended by the next run's start)
        self.assets_fetched: list[str] = []  # with assets=True: the page and the files it named
        self.session_id = ""
        self.page_script_hash = ""
        self.widgets: dict[str, Widget] = {}  # by user key, from the runs so far
        self.runs: list[Run] = []
        self._values: dict[str, Any] = {}  # widget id -> WidgetState the browser would hold
        self._cache: dict[str, ForwardMsg] = {}  # cacheable messages by hash
        self._http: httpx2.AsyncClient | None = None
        self._ws: Any = None
        self._reader: asyncio.Task[None] | None = None
        self._run: Run | None = None
        self._finished: asyncio.Future[None] | None = None
        self._sink: Run | None = None  # the run the arriving elements belong to
        self._goes_on: Run | None = None  # a run that ended early for an st.rerun: the next full run is its own
        self._fragment = Run(started=0.0, origin="fragment")  # where a fragment run's elements go
        self._timers: dict[str, tuple[float, asyncio.Task[None]]] = {}  # fragment id -> (interval, timer)
        self._background: set[asyncio.Task[None]] = set()  # picture GETs of runs no request waits for
        self._pictures: set[str] = set()  # the URLs fetched (or being fetched) so far
        self._run_ended = asyncio.Event()
        self._file_urls: dict[str, asyncio.Future[Any]] = {}
        self._media: list[asyncio.Task[None]] = []
        self._ids = itertools.count()
        self._closed = False
        self.upload_seconds: float | None = None  # the last upload's PUT

    # --- connection ----------------------------------------------------------------------------

    async def __aenter__(self) -> Session:
        await self.connect()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def first_run(self) -> Run:
        if not self.runs:
            raise LookupError("the session has not run yet: call connect() (or use `async with Session(...)`)")
        return self.runs[0]

    async def connect(self) -> Run:
        """The page's connection: health and host-config (XSRF cookie), the websocket, the first run."""
        self._http = httpx2.AsyncClient(base_url=self.url, timeout=HTTP_TIMEOUT_S)
        if self.assets:
            await self._page_assets()
        for path in ("/_stcore/health", "/_stcore/host-config"):
            response = await self._http.get(path)
            if response.status_code != 200:
                raise LoadClientError(
                    f"GET {path} answered {response.status_code}: is the page server up at {self.url}?")
        xsrf = self._http.cookies.get(XSRF_COOKIE)
        protocols = ["streamlit", xsrf] if xsrf else ["streamlit"]
        self._ws = await websockets.connect(
            _ws_url(self.url), subprotocols=protocols, origin=self.url, max_size=None,
            ping_interval=None,  # a browser never pings; it answers the server's pings (websockets does too)
            open_timeout=30,
            additional_headers={"Cookie": f"{XSRF_COOKIE}={xsrf}"} if xsrf else None)
        self._reader = asyncio.create_task(self._read(), name="loadclient-read")
        return await self._rerun()

    async def _page_assets(self) -> None:
        """The page's HTML and the files it names, six at a time (a browser's connections per host)."""
        http = self._http
        assert http is not None
        page = await http.get("/" + (f"?{self.query}" if self.query else ""))
        if page.status_code != 200:
            raise LoadClientError(f"GET / answered {page.status_code}: is the page server up at {self.url}?")
        self.assets_fetched.append("")
        gate = asyncio.Semaphore(6)

        async def get(path: str) -> None:
            async with gate:
                response = await http.get("/" + path)
            if response.status_code != 200:
                raise LoadClientError(f"GET /{path} answered {response.status_code}")
            self.assets_fetched.append(path)

        await asyncio.gather(*(get(path) for path in dict.fromkeys(ASSET.findall(page.text))))

    async def close(self) -> None:
        """Close the websocket (the server ends the session) and the HTTP client."""
        if self._closed:
            return
        self._closed = True
        self._clear_timers()
        if self._sink is not None and self._sink.origin == "server" and self._sink.status == "running":
            self._sink.status = "closed"  # the visitor left while the server ran it
        for task in [*self._media, *self._background]:
            task.cancel()
        if self._ws is not None:
            await self._ws.close()
        if self._reader is not None:
            await asyncio.gather(self._reader, return_exceptions=True)
        if self._http is not None:
            await self._http.aclose()

    # --- what a visitor does -------------------------------------------------------------------

    def widget(self, key: str) -> Widget:
        """The widget keyed ``key`` in the runs so far (its id ends with the key)."""
        try:
            return self.widgets[key]
        except KeyError:
            raise LookupError(f"no widget keyed {key!r} has appeared on the page yet (seen: {sorted(self.widgets)}); "
                              "show it first, e.g. by choosing the source that has it") from None

    async def set_widget(self, key: str, value: Any, value_field: str | None = None) -> Run:
        """Set the widget keyed ``key`` as a person would and wait for the run that follows.

        Option widgets take a label, an index or a label's first word (a list for multiselect);
        a slider a number or a pair; a number input a number; a checkbox a bool; a button True.
        ``value_field`` names the WidgetState field for a kind not listed in VALUE_FIELD.
        """
        w = self.widget(key)
        state = ClientState().widget_states.widgets.add()
        state.id = w.id
        name = value_field or self._value_field(w)
        if w.kind in OPTION_KINDS:
            labels = [_match_option(w, v) for v in (value if isinstance(value, list | tuple) else [value])]
            if name == "string_value":
                state.string_value = labels[0]
            else:
                state.string_array_value.data.extend(labels)
        elif name == "double_array_value":
            state.double_array_value.data.extend(value if isinstance(value, list | tuple) else [value])
        elif name == "string_array_value":
            state.string_array_value.data.extend(value)
        else:
            setattr(state, name, value)
        self._values[w.id] = state
        return await self._rerun()

    async def upload(self, key: str, name: str, data: bytes, mime: str = "application/octet-stream") -> Run:
        """Give the file uploader keyed ``key`` one file, as the page does, and wait for the run.

        The run's ``seconds`` count from the ``file_urls_request`` (the upload's first step) to
        the run's end; ``upload_seconds`` on the session holds the PUT alone.
        """
        w = self.widget(key)
        if w.kind != "file_uploader":
            raise ValueError(f"the widget keyed {key!r} is a {w.kind}, not a file_uploader")
        started = time.perf_counter()
        request_id = f"lc-{next(self._ids)}"
        answer: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._file_urls[request_id] = answer
        msg = BackMsg()
        msg.file_urls_request.request_id = request_id
        msg.file_urls_request.file_names.append(name)
        msg.file_urls_request.session_id = self.session_id
        await self._send(msg)
        urls = (await asyncio.wait_for(answer, self.run_timeout)).file_urls[0]
        assert self._http is not None
        put = time.perf_counter()
        response = await self._http.put(
            urls.upload_url, files={name: (name, data, mime)},
            headers={"X-Xsrftoken": self._http.cookies.get(XSRF_COOKIE) or ""})
        self.upload_seconds = time.perf_counter() - put
        if response.status_code not in (200, 204):
            raise LoadClientError(f"PUT {urls.upload_url} answered {response.status_code}: {response.text[:200]}")
        state = ClientState().widget_states.widgets.add()
        state.id = w.id
        info = state.file_uploader_state_value.uploaded_file_info.add()
        info.file_id, info.name, info.size = urls.file_id, name, len(data)
        info.file_urls.CopyFrom(urls)
        self._values[w.id] = state
        return await self._rerun(started)

    async def rerun(self) -> Run:
        """Run the page again with the same values (the "Rerun" menu item)."""
        return await self._rerun()

    @property
    def server_runs(self) -> list[Run]:
        """The full runs the server started on its own (see ``auto_rerun``), in arrival order."""
        return [r for r in self.runs if r.origin == "server"]

    async def wait_for(self, shows: Callable[[Run], bool], timeout: float) -> Run | None:
        """The first finished run (of any origin) that ``shows`` accepts, waiting up to ``timeout``
        seconds for one to come; None if none did."""
        deadline = time.perf_counter() + timeout
        while True:
            for run in self.runs:
                if run.finished is not None and shows(run):
                    return run
            left = deadline - time.perf_counter()
            if left <= 0 or self._closed:
                return None
            self._run_ended.clear()
            try:
                await asyncio.wait_for(self._run_ended.wait(), left)
            except TimeoutError:
                pass

    # --- protocol ------------------------------------------------------------------------------

    @staticmethod
    def _value_field(w: Widget) -> str:
        if w.kind == "number_input":
            return "int_value" if w.proto.data_type == w.proto.INT else "double_value"
        try:
            return VALUE_FIELD[w.kind]
        except KeyError:
            raise ValueError(f"set_widget does not know which value a {w.kind} sends; pass value_field=") from None

    def _context(self, cs: ClientState) -> None:
        ctx = cs.context_info
        ctx.locale, ctx.timezone, ctx.timezone_offset = self.locale, "UTC", 0
        ctx.url = self.url + "/"  # as the page sends it: without the query string
        ctx.color_scheme = "light"

    async def _send(self, msg: BackMsg) -> None:
        if self._ws is None:
            raise LoadClientError("the session is not connected: call connect() first")
        await self._ws.send(msg.SerializeToString())

    def _rerun_msg(self, fragment_id: str = "", auto: bool = False) -> BackMsg:
        """The page's rerun BackMsg: query string, page, widget values, kept messages, context."""
        msg = BackMsg()
        cs = msg.rerun_script
        cs.query_string = self.query
        cs.page_script_hash = self.page_script_hash
        cs.widget_states.widgets.extend(self._values.values())
        cs.cached_message_hashes.extend(self._cache)
        cs.fragment_id, cs.is_auto_rerun = fragment_id, auto
        self._context(cs)
        return msg

    def _pending(self) -> bool:
        return self._finished is not None and not self._finished.done()

    async def _rerun(self, started: float | None = None) -> Run:
        if self._pending():
            raise LoadClientError("one run at a time: wait for the run in progress before asking for another")
        msg = self._rerun_msg()
        # a button's trigger is one click: the browser clears it once the rerun is sent
        self._values = {k: v for k, v in self._values.items() if v.WhichOneof("value") != "trigger_value"}
        run = Run(started=started if started is not None else time.perf_counter())
        self._run, self._media = run, []
        self._finished = asyncio.get_running_loop().create_future()
        self.runs.append(run)
        try:
            await self._send(msg)
            await asyncio.wait_for(asyncio.shield(self._finished), self.run_timeout)
        except TimeoutError:
            run.status = "timeout"
            run.errors.append(f"no script_finished within {self.run_timeout:.0f} s")
        except websockets.ConnectionClosed as e:
            run.status = "disconnected"
            run.errors.append(f"the websocket closed: {e}")
        if self._media:
            await asyncio.gather(*self._media, return_exceptions=True)
            run.media_seconds = time.perf_counter() - run.started
        return run

    # --- run_every timers (auto_rerun=True) -------------------------------------------------------

    def _arm(self, fragment_id: str, interval: float) -> None:
        """A ``run_every`` timer for ``fragment_id`` ("" the page's own); the same interval keeps
        the countdown already running, another one replaces the timer."""
        kept = self._timers.get(fragment_id)
        if kept is not None and kept[0] == interval:
            return
        self._clear_timers([fragment_id])
        if interval > 0 and not self._closed:
            task = asyncio.create_task(self._tick(fragment_id, interval), name=f"loadclient-auto-{fragment_id}")
            self._timers[fragment_id] = (interval, task)

    def _clear_timers(self, fragment_ids: Iterable[str] | None = None) -> None:
        for fragment_id in list(self._timers if fragment_ids is None else fragment_ids):
            kept = self._timers.pop(fragment_id, None)
            if kept is not None:
                kept[1].cancel()  # asleep: a timer cancels itself before it sends (see _tick)

    async def _tick(self, fragment_id: str, interval: float) -> None:
        me = asyncio.current_task()
        while True:
            await asyncio.sleep(interval)
            kept = self._timers.get(fragment_id)
            if kept is None or kept[1] is not me:
                return
            if not fragment_id and (self._pending() or self._sink is not None):
                continue  # a page tick waits for the run in progress, as the browser holds it
            try:
                await self._send(self._rerun_msg(fragment_id, auto=True))
            except (websockets.ConnectionClosed, LoadClientError):
                return
            self.auto_reruns_sent += 1

    async def _read(self) -> None:
        try:
            async for raw in self._ws:
                msg = ForwardMsg()
                msg.ParseFromString(raw)
                self._handle(msg)
        except websockets.ConnectionClosed:
            pass
        finally:
            if self._finished is not None and not self._finished.done() and self._run is not None:
                self._run.status = "disconnected"
                self._run.errors.append("the server closed the websocket before the run finished")
                self._finished.set_result(None)
            for answer in self._file_urls.values():
                if not answer.done():
                    answer.set_exception(LoadClientError("the websocket closed before the upload URL came"))

    def _handle(self, msg: ForwardMsg) -> None:
        kind = msg.WhichOneof("type")
        if kind == "ref_hash":
            cached = self._cache.get(msg.ref_hash)
            if cached is None:
                self._error(f"the server referred to message {msg.ref_hash} that this client never kept")
                return
            kind, msg = cached.WhichOneof("type"), cached
        elif msg.metadata.cacheable and msg.hash:
            self._cache[msg.hash] = msg
        if kind == "new_session":
            if msg.new_session.initialize.session_id:
                self.session_id = msg.new_session.initialize.session_id
            self.page_script_hash = msg.new_session.page_script_hash
            self._new_run(list(msg.metadata.run.fragment_ids))  # empty for a full run
            return
        run = self._sink if self._sink is not None else self._run if self._pending() else None
        if kind == "auto_rerun":
            if self.auto_rerun:
                self._arm(msg.auto_rerun.fragment_id, msg.auto_rerun.interval)
        elif kind == "stop_auto_rerun":
            self._clear_timers(msg.stop_auto_rerun.fragment_ids)
        elif kind == "page_info_changed":
            self.query = msg.page_info_changed.query_string  # the address bar follows the page
        elif kind == "delta" and msg.delta.WhichOneof("type") == "new_element":
            self._element(msg.delta.new_element)
        elif kind == "session_event" and msg.session_event.WhichOneof("type") == "script_compilation_exception":
            self._error(f"compile error: {msg.session_event.script_compilation_exception.message}")
            if run is not None:
                run.status = "compile_error"
        elif kind == "file_urls_response":
            answer = self._file_urls.pop(msg.file_urls_response.response_id, None)
            if answer is not None and not answer.done():
                if msg.file_urls_response.error_msg:
                    answer.set_exception(LoadClientError(msg.file_urls_response.error_msg))
                else:
                    answer.set_result(msg.file_urls_response)
        elif kind == "script_finished":
            status = msg.script_finished
            if run is self._fragment:
                if status != ForwardMsg.FINISHED_EARLY_FOR_RERUN:
                    self.fragment_runs += 1
                    self._sink = None
                return  # a fragment ran (an st.rerun(scope="app") in it: the full run comes next)
            if run is None:
                return
            if status == ForwardMsg.FINISHED_EARLY_FOR_RERUN:
                self._goes_on = run  # the run goes on (st.rerun): not the end of the page's run
                return
            self._end(run, "ok" if status == ForwardMsg.FINISHED_SUCCESSFULLY else "compile_error")
            self._sink = None

    def _end(self, run: Run, status: str) -> None:
        run.finished = time.perf_counter()
        run.seconds = run.finished - run.started
        if run.status == "running":
            run.status = status
        if run is self._run and self._finished is not None and not self._finished.done():
            self._finished.set_result(None)
        self._run_ended.set()

    def _new_run(self, fragment_ids: list[str]) -> None:
        """Where the run a ``new_session`` opens belongs: a fragment's run, the run this client
        asked for, the run an st.rerun ended early, or (none of these) a full run the server
        started on its own.

        The run still open here ended without its ``script_finished``: one that an st.rerun ended
        early for another run is "interrupted"; any other ends now, as the page shows it. (Streamlit
        drops the finish of a ScriptRunner that ended just as a request made the next one: the
        session ignores events from a runner that is no longer its current one.)"""
        left, goes_on, self._goes_on = self._sink, self._goes_on, None
        nxt: Run | None
        if fragment_ids:
            nxt = self._fragment
        else:
            if self.auto_rerun:
                self._clear_timers()  # a full run: the browser clears every timer; the run arms them again
            if self._pending():
                nxt = self._run
            elif goes_on is not None:
                nxt = goes_on
            else:
                nxt = Run(started=time.perf_counter(), origin="server")
                self.runs.append(nxt)
        if left is not None and left is not nxt and left is not self._fragment and left.status == "running":
            if left is goes_on:
                left.status = "interrupted"
            else:
                self.finishes_missing += 1
                self._end(left, "ok")
        self._sink = nxt

    def _element(self, element: Any) -> None:
        kind = element.WhichOneof("type")
        proto = getattr(element, kind)
        if self._sink is not None:
            self._sink.elements.append((kind, proto))
        widget_id = getattr(proto, "id", "") if kind != "imgs" else ""
        key = widget_key(widget_id) if isinstance(widget_id, str) else None
        if key is not None:
            self.widgets[key] = Widget(widget_id, kind, proto)
        if kind == "exception":
            self._error(f"exception {proto.type}: {proto.message}")
        elif kind == "alert" and proto.format == Alert.ERROR:
            self._error(f"error shown: {proto.body}")
        elif kind == "imgs":
            for img in proto.imgs:
                self._picture(img.url)

    def _picture(self, url: str) -> None:
        run = self._sink
        if run is None or not url:
            return
        run.images.append(url)
        if self.fetch_media and not url.startswith("data:") and url not in self._pictures:
            self._pictures.add(url)
            task = asyncio.create_task(self._fetch(run, url))
            if run is self._run:
                self._media.append(task)
            else:  # no request waits for it: keep a reference until it is done
                self._background.add(task)
                task.add_done_callback(self._background.discard)

    async def _fetch(self, run: Run, url: str) -> None:
        assert self._http is not None
        try:
            try:
                response = await self._http.get(url)
            except httpx2.TransportError:  # a keep-alive connection the server closed as we sent: browsers
                response = await self._http.get(url)  # retry an idempotent GET once on a new one
        except httpx2.HTTPError as e:
            run.errors.append(f"GET {url} failed: {e!r}")
            return
        if response.status_code != 200:
            run.errors.append(f"GET {url} answered {response.status_code}")
        else:
            run.media_bytes[url] = len(response.content)

    def _error(self, text: str) -> None:
        if self._sink is self._fragment:
            self.fragment_errors.append(text)
        elif self._sink is not None:
            self._sink.errors.append(text)
        elif self._run is not None and self._pending():
            self._run.errors.append(text)


def widget_key(widget_id: str) -> str | None:
    """The user key at the end of a widget id (``"$$ID-<hash>-source"`` -> ``"source"``), or None."""
    if not widget_id.startswith(ID_PREFIX):
        return None
    key = widget_id[len(ID_PREFIX):].split("-", 1)[-1]
    return None if key == "None" else key


def percentile(values: Sequence[float], q: float) -> float | None:
    """The q-th percentile (linear interpolation, as numpy's default); None for no values."""
    data = sorted(values)
    if not data:
        return None
    at = (len(data) - 1) * q / 100
    low = int(at)
    high = min(low + 1, len(data) - 1)
    return data[low] + (data[high] - data[low]) * (at - low)


def seconds_of(runs: Iterable[Run]) -> list[float]:
    return [r.seconds for r in runs if r.seconds is not None]
