"""The Live source: the browser's camera, streamed over WebRTC (streamlit-webrtc, aiortc), through
the model up to one layer, shown beside (or under) that layer's maps while it plays.

The frames are processed in streamlit-webrtc's worker thread by a :class:`vizhooks.live.LiveProcessor`
kept in this session's state; the widgets only swap its settings, so a change never restarts the
stream. Only the newest frame is processed (the stream skips frames that arrive meanwhile), and a
frame that arrives while another session holds the shared model is dropped, never queued.

No ICE server by default: the browser and the server then connect over their own addresses, which
works on localhost and on a local network and contacts nobody else. ``VIZHOOKS_ICE_SERVERS`` (a JSON
list of ``{"urls": ..., "username": ..., "credential": ...}``) adds STUN or TURN servers for people
on other networks; streamlit-webrtc passes the same list to the browser and to aiortc.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import streamlit as st

from vizhooks.live import CHANNEL_PICKS, MODES, LiveProcessor, LiveSettings, limit_torch_threads_here
from vizhooks.models.layers import architecture_layers, quick_picks, token_model
from vizhooks.models.registry import ModelBundle, display_name
from vizhooks.ops import is_out_of_memory
from vizhooks.page.errors import reason
from vizhooks.page.taught import is_taught
from vizhooks.page.texts import language, set_language, t, use_session_language
from vizhooks.page.widgets import keep_below, keep_valid, shown_labels

LOG = logging.getLogger("vizhooks.live")
ICE_ENV = "VIZHOOKS_ICE_SERVERS"
#: Hosts a browser treats as a secure origin over plain HTTP (camera allowed).
_LOCAL_HOSTS = ("localhost", "127.0.0.1", "::1")
_ICE_KEYS = {"urls", "username", "credential"}
_ICE_SCHEMES = ("stun:", "stuns:", "turn:", "turns:")
SIZES = (64, 96, 128, 160, 192, 224, 256, 320)
#: torch threads of each stream's passes (see vizhooks.live.limit_torch_threads_here)
LIVE_THREADS = 1
#: The video component's texts, translated (see streamlit_webrtc.config.Translations).
_COMPONENT_TEXTS = ("start", "stop", "select_device", "media_api_not_available", "device_ask_permission",
                    "device_not_available", "device_access_denied", "turn_camera_on", "turn_camera_off",
                    "mute_microphone", "unmute_microphone", "select_camera", "select_microphone")


def ice_servers(raw: str | None) -> list[dict]:
    """The ICE servers named by ``raw`` (the text of ``VIZHOOKS_ICE_SERVERS``); none when empty.

    Raises:
        ValueError: not a JSON list of ``{"urls": "stun:..." or "turn:..." or a list of them,
            "username": ..., "credential": ...}`` objects.

    Example:
        >>> ice_servers('[{"urls": ["stun:stun.example.org:3478"]}]')
        [{'urls': ['stun:stun.example.org:3478']}]
    """
    if raw is None or not raw.strip():
        return []
    example = '[{"urls": ["turn:turn.example.org:3478"], "username": "u", "credential": "p"}]'
    try:
        servers = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{ICE_ENV} is not valid JSON ({exc.msg}); write a list such as {example}.") from None
    if not isinstance(servers, list):
        raise ValueError(f"{ICE_ENV} must be a JSON list such as {example}.")
    for server in servers:
        if not isinstance(server, dict) or "urls" not in server or not set(server) <= _ICE_KEYS:
            raise ValueError(f"Each entry of {ICE_ENV} needs \"urls\" and may have \"username\" and "
                             f"\"credential\", nothing else, not {json.dumps(server)}.")
        urls = server["urls"] if isinstance(server["urls"], list) else [server["urls"]]
        if not urls or not all(isinstance(u, str) and u.startswith(_ICE_SCHEMES) for u in urls):
            raise ValueError(f"The urls of {ICE_ENV} must start with stun:, stuns:, turn: or turns:, "
                             f"not {json.dumps(server['urls'])}.")
    return servers


def insecure_origin(url: str | None) -> tuple[str, str] | None:
    """``(host, origin)`` when a page at ``url`` cannot have the camera (plain HTTP, not
    localhost), else None."""
    if not url:
        return None
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.scheme != "http" or host in _LOCAL_HOSTS or host.endswith(".localhost"):
        return None
    return host, f"{parts.scheme}://{parts.netloc}"


@dataclass
class _Stream:
    """This session's processor and the newest error sentence from the worker thread."""

    processor: LiveProcessor
    error: str | None = None


def _frames_callback(stream: _Stream) -> Callable[[list[Any]], Awaitable[list[Any]]]:
    """streamlit-webrtc's queued-frames callback: the newest frame through the processor; the
    older ones are counted as skipped. Runs in the WebRTC worker thread: no st.* here, and an
    error becomes a sentence for the page instead of ending the stream."""
    import av

    lang = language()  # the page's, for sentences made in the worker thread

    async def on_frames(frames: list[av.VideoFrame]) -> list[av.VideoFrame]:
        limit_torch_threads_here(LIVE_THREADS)  # this stream's worker thread only; once
        set_language(lang)
        if len(frames) > 1:
            stream.processor.note_skipped(len(frames) - 1)
        frame = frames[-1]
        try:
            out = stream.processor.process(frame.to_ndarray(format="rgb24"))
        except (ValueError, KeyError) as exc:
            stream.error = t("live_failed", reason=reason(exc) if language() != "en" or not exc.args
                             else exc.args[0])
            return [frame]
        except (RuntimeError, MemoryError) as exc:
            LOG.warning("live frame failed (out of memory: %s)", is_out_of_memory(exc), exc_info=True)
            stream.error = t("live_failed_run")
            return [frame]
        stream.error = None
        return [av.VideoFrame.from_ndarray(out, format="rgb24")]

    return on_frames


def _layer_options(model: str, layers: tuple[str, ...]) -> list[str]:
    return list(layers) or quick_picks(architecture_layers(model), token_model(model))["tour"]


def _channel_count(model: str, layer: str) -> int | None:
    for info in architecture_layers(model):
        if info.name == layer:
            return info.out_channels or info.out_channels_map
    return None


def _controls(model: str, bundle: ModelBundle, layers: tuple[str, ...], cmap: str) -> LiveSettings:
    """The live view's widgets; returns what they say as one settings object."""
    options = _layer_options(model, layers)
    keep_valid("live_layer", options, options[len(options) // 2])  # the middle of the network
    left, middle, right = st.columns(3)
    layer = left.selectbox(t("live_layer"), options, key="live_layer", help=t("live_layer_help"))
    lang_labels = {m: t(f"live_mode_{m}") for m in MODES}
    mode = middle.radio(t("live_mode"), MODES, key="live_mode", format_func=lang_labels.get)
    channel, pick, opacity = 0, "first", 0.5
    if mode == "grid":
        pick_labels = {p: t(f"live_pick_{p}") for p in CHANNEL_PICKS}
        pick = right.radio(t("live_pick"), CHANNEL_PICKS, key="live_pick", format_func=pick_labels.get)
    else:
        count = _channel_count(model, layer)
        if count is not None:
            keep_below("live_channel", count)
        channel = int(right.number_input(t("live_channel"), min_value=0,
                                         max_value=None if count is None else count - 1, step=1, key="live_channel"))
        opacity = float(right.slider(t("live_opacity"), 0.0, 1.0, value=0.5, step=0.05, key="live_opacity"))
    st.session_state.setdefault("live_size", 160)
    size = int(left.select_slider(t("live_size"), SIZES, key="live_size", help=t("live_size_help")))
    if bundle.input.fixed_size:
        st.caption(t("live_fixed", name=display_name(bundle.name), side=bundle.input.fixed_size))
    # a taught model's classes are the student's own: each frame also runs to the end and is named
    return LiveSettings(layer=layer, channels=pick, mode=mode, channel=channel, cmap=cmap, size=size,
                        opacity=opacity, classify=is_taught(model))


def _stream_for(bundle: ModelBundle, settings: LiveSettings) -> _Stream:
    """This session's stream state; a new processor when the model changed, else new settings for
    the one that is running (they apply from the next frame)."""
    stream = st.session_state.get("_live_stream")
    if stream is None or stream.processor.bundle is not bundle:
        stream = st.session_state["_live_stream"] = _Stream(LiveProcessor(bundle, settings))
    else:
        stream.processor.settings = settings
    return stream


def _show_stats(stream: _Stream, playing: bool) -> None:
    use_session_language()  # a fragment's run skips main(), where the language is set
    s = stream.processor.stats()
    if stream.error:
        st.error(stream.error)
    if not playing and not s.running:
        st.caption(t("live_idle"))
        return
    if s.top is not None:
        index, probability = s.top
        st.metric(t("live_top"), t("live_top_value", label=shown_labels(stream.processor.bundle)[index],
                                   p=probability))
    fps, latency, processed, dropped, skipped = st.columns(5)
    fps.metric(t("live_fps"), f"{s.fps:.1f}")
    latency.metric(t("live_latency"), t("live_latency_value", ms=s.latency_ms))
    processed.metric(t("live_processed"), s.processed)
    # two different things: a frame given up because another session held the model, and one the
    # stream skipped because this session's previous frame was still running (normal, not alarming)
    dropped.metric(t("live_dropped"), s.dropped, help=t("live_dropped_help"))
    skipped.metric(t("live_skipped"), s.skipped, help=t("live_skipped_help"))
    st.caption(t("live_stats", fps=s.fps, latency=s.latency_ms, last=s.last_latency_ms, processed=s.processed,
                 dropped=s.dropped, skipped=s.skipped))


def show_live(model: str, bundle: ModelBundle, layers: tuple[str, ...], cmap: str) -> None:
    """The Live source's main area: a line on what happens, the controls, the stream and its
    measured frame rate and latency (updated every second while it plays)."""
    from streamlit_webrtc import WebRtcMode, webrtc_streamer

    st.markdown(t("live_intro", model=model))
    insecure = insecure_origin(st.context.url)
    if insecure is not None:
        st.warning(t("live_https", host=insecure[0], origin=insecure[1]))
    try:
        servers = ice_servers(os.environ.get(ICE_ENV))
    except ValueError as exc:
        st.warning(t("live_ice_bad", reason=str(exc)))
        servers = []
    settings = _controls(model, bundle, layers, cmap)
    stream = _stream_for(bundle, settings)
    # call-overload: `translations` is a plain dict over the keys of streamlit-webrtc's Translations TypedDict
    ctx = webrtc_streamer(  # type: ignore[call-overload]
        key="live",
        mode=WebRtcMode.SENDRECV,
        # An explicit list, even an empty one: with none, streamlit-webrtc and aiortc would fill in
        # Google's public STUN server.
        rtc_configuration={"iceServers": servers},
        media_stream_constraints={"video": True, "audio": False},
        queued_video_frames_callback=_frames_callback(stream),
        on_video_ended=stream.processor.stream_ended,
        async_processing=True,
        video_html_attrs={"autoPlay": True, "controls": False, "muted": True, "playsInline": True,
                          "style": {"width": "100%"}},
        translations={key: t(f"live_c_{key}") for key in _COMPONENT_TEXTS},
    )
    playing = bool(ctx.state.playing or ctx.state.signalling)
    st.fragment(_show_stats, run_every=1.0 if playing else None)(stream, playing)
