"""The Video source: every frame of a clip captured once in batched passes, then a frame slider
(and a play button) that only redraws; exports as a movie of one layer and as an NPZ."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import streamlit as st

import vizhooks as vz
from vizhooks.analysis import VideoAnalysis, frame_cams, frames_input, image_digest
from vizhooks.hooks.budget import check_capture
from vizhooks.page.errors import shown_errors
from vizhooks.page.results import cached, get_bundle
from vizhooks.page.state import Choices, Context, sync_url
from vizhooks.page.texts import t, use_session_language
from vizhooks.page.views import inspector, maps
from vizhooks.page.widgets import (
    class_select,
    fraction,
    input_and_predictions,
    keep_valid,
    labels_for,
    layer_columns,
    progress_bar,
    shown_labels,
)
from vizhooks.render.figures import channel_overlay
from vizhooks.video import (
    DEFAULT_MAX_FRAMES,
    MAX_VIDEO_MB,
    MAX_VIDEO_SECONDS,
    VIDEO_TYPES,
    Clip,
    capture_frames_with_output,
    frames_npz_bytes,
    layer_video,
    read_clip,
)

if TYPE_CHECKING:
    from torch import Tensor

VIDEO_VIEWS = ("maps", "inspector", "gradcam")
PLAY_SECONDS = 0.5  # one frame per half second while playing: the grids of 5 layers redraw in time


def video_sidebar(sb: Any) -> None:
    sb.file_uploader(t("video_upload"), type=list(VIDEO_TYPES), key="video_upload",
                     help=t("video_upload_help", mb=MAX_VIDEO_MB, seconds=MAX_VIDEO_SECONDS))
    st.session_state.setdefault("video_frames", DEFAULT_MAX_FRAMES)
    sb.slider(t("video_frames"), 8, 96, step=8, key="video_frames", help=t("video_frames_help"))


def get_clip(digest: str, data: bytes, max_frames: int) -> Clip:
    """The clip's frames, decoded once per (clip, frame count) and shared by all sessions."""
    def make() -> Clip:
        with progress_bar(t("video_decoding")) as bar:
            return read_clip(data, max_frames=max_frames, progress=lambda done, total: bar.progress(
                fraction(done, total), text=t("video_decoding_n", i=done, n=total)))

    return cached(("clip", digest, max_frames), make, lambda clip: sum(3 * f.width * f.height for f in clip.frames))


def get_video_analysis(model: str, digest: str, clip: Clip, size: int, layers: tuple[str, ...],
                       what: str) -> VideoAnalysis:
    def make() -> VideoAnalysis:
        bundle = get_bundle(model)
        pictures = [bundle.resize(f, size) for f in clip.frames]
        height, width = bundle.preprocess(clip.frames[0], size).shape[-2:]
        check_capture(model, list(layers), (height, width), copies=len(pictures))
        with progress_bar(t("video_capturing", n=len(pictures))) as bar:
            acts, logits = capture_frames_with_output(
                bundle, clip.frames, list(layers), size=size, what=what,
                progress=lambda done, total: bar.progress(fraction(done, total),
                                                          text=t("video_capturing_n", i=done, n=total)))
        return VideoAnalysis(pictures, list(clip.times), frames_input(bundle, clip.frames, size), acts, logits, what)

    return cached(("video", model, digest, len(clip.frames), size, layers, what), make, lambda v: v.nbytes)


def get_video_cams(model: str, key: tuple, video: VideoAnalysis, layers: tuple[str, ...],
                   target: int | None) -> dict[str, Tensor]:
    """Grad-CAM of every frame for one class (None: each frame's own top class), computed once
    with a progress bar; ``{layer: (T, H, W)}``."""
    def make() -> dict[str, Tensor]:
        net = get_bundle(model).model
        hw = (int(video.x.shape[-2]), int(video.x.shape[-1]))
        check_capture(model, list(layers), hw, copies=2)
        n = len(video.pictures)
        with progress_bar(t("video_cams", n=n)) as bar:
            return frame_cams(net, video.x, list(layers), target=target,
                              progress=lambda i: bar.progress(i / n, text=t("video_cams_n", i=i, n=n)))

    return cached(("video-cams", model, key, layers, target), make, lambda cams: sum(c.nbytes for c in cams.values()))


def toggle_play() -> None:
    st.session_state["video_playing"] = not st.session_state.get("video_playing", False)


def show_video_frame(video: VideoAnalysis, bundle: vz.ModelBundle, c: Choices, digest: str, view: str) -> None:
    """The slider and the chosen view of the current frame; while playing, this part alone reruns
    every PLAY_SECONDS and moves one frame on. Nothing here runs the model."""
    use_session_language()  # a fragment's run skips main(), where the language is set
    count = len(video.pictures)
    frame = min(int(st.session_state.get("video_frame", 0)), count - 1)
    if st.session_state.get("video_playing"):
        frame = (frame + 1) % count
    st.session_state["video_frame"] = frame
    st.slider(t("video_frame"), 0, count - 1, key="video_frame", disabled=count == 1,
              help=t("video_frame_help", n=count))
    frame = int(st.session_state["video_frame"])
    st.caption(t("video_at", i=frame + 1, n=count, s=video.times[frame]))
    analysis = video.frame(frame)
    input_and_predictions(analysis, bundle, c.size)
    st.divider()
    ctx = Context(c, bundle, analysis, f"{digest}-{count}-f{frame}")  # the PNG caches: one entry per frame
    if view == "maps":
        maps.show(ctx)
    elif view == "inspector":
        inspector.show(ctx)
    else:
        show_video_gradcam(video, frame, bundle, c, digest)


def show_video_gradcam(video: VideoAnalysis, frame: int, bundle: vz.ModelBundle, c: Choices, digest: str) -> None:
    cats = shown_labels(bundle)
    target = class_select(cats, "video_target", t("video_target_each"), t("video_target_help"))
    alpha = st.slider(t("cam_alpha"), 0.0, 1.0, value=0.5, step=0.05, key="video_cam_alpha")
    cams = get_video_cams(c.model, (digest, len(video.pictures), c.size), video, c.layers, target)
    label = cats[int(video.logits[frame].argmax())] if target is None else cats[target]
    for _, name in layer_columns(list(cams)):
        st.image(channel_overlay(video.pictures[frame], cams[name][frame], alpha, "jet"),
                 caption=t("cam_caption", layer=name, label=label))


def show_video_export(video: VideoAnalysis, c: Choices, digest: str) -> None:
    st.divider()
    st.subheader(t("video_export"))
    layers = [n for n in c.layers if n in video.activations]
    keep_valid("video_export_layer", layers, layers[0])
    left, mid, right = st.columns([2, 2, 2])
    layer = left.selectbox(t("video_export_layer"), layers, key="video_export_layer")
    fps = mid.select_slider(t("video_export_fps"), (2, 4, 8, 12, 24), value=8, key="video_export_fps")

    key = ("movie", c.model, digest, len(video.pictures), c.size, c.what, layer, fps, c.channels, c.order, c.cmap,
           c.columns)
    with right:
        if st.button(t("video_make_movie"), key="video_make_movie", icon=":material/movie:"):
            with st.spinner(t("video_encoding", layer=layer)):
                st.session_state["video_movie"] = (key, layer_video(
                    video.activations[layer], fps=float(fps), channels=c.channels, order=c.order, cmap=c.cmap,
                    columns=c.columns, title=layer))
    kept = st.session_state.get("video_movie")  # this session's last movie, while its settings hold
    made = kept[1] if kept is not None and kept[0] == key else None
    if made is not None:
        data, mime, ext = made
        if mime.startswith("video/"):
            st.video(data, format=mime, loop=True)
        else:
            st.image(data)
        st.download_button(t("video_download_movie", ext=ext.upper().lstrip(".")), data=data,
                           file_name=f"{layer}.{ext.lstrip('.')}", mime=mime, key="video_download_movie",
                           on_click="ignore", icon=":material/download:")
    st.download_button(t("video_download_npz"), data=lambda: frames_npz_bytes(video.activations, video.times),
                       file_name=f"vizhooks-{c.model}-{digest[:8]}-frames.npz", mime="application/octet-stream",
                       key="video_download_npz", on_click="ignore", help=t("video_download_npz_help"))


def show_video(bundle: vz.ModelBundle, c: Choices) -> None:
    """The Video source's main area."""
    widget = st.session_state.get("video_upload")
    view = st.radio(t("view"), VIDEO_VIEWS, key="video_view", horizontal=True, label_visibility="collapsed",
                    format_func=labels_for("view_"))
    sync_url(c, view)
    if widget is None:
        st.info(t("no_video", mb=MAX_VIDEO_MB, seconds=MAX_VIDEO_SECONDS))
        return
    if not c.layers:
        st.info(t("no_layers"))
        return
    data = widget.getvalue()
    digest = image_digest(data)
    max_frames = int(st.session_state.get("video_frames", DEFAULT_MAX_FRAMES))
    with shown_errors():
        clip = get_clip(digest, data, max_frames)
        video = get_video_analysis(c.model, digest, clip, c.size, c.layers, c.what)
    st.caption(t("video_summary", n=len(clip.frames), total=clip.frame_count, seconds=clip.duration,
                 fps=clip.fps, w=clip.width, h=clip.height))
    playing = bool(st.session_state.get("video_playing"))
    st.button(t("video_pause") if playing else t("video_play"), key="video_play", on_click=toggle_play,
              icon=":material/pause:" if playing else ":material/play_arrow:", disabled=len(clip.frames) < 2)
    part = st.fragment(show_video_frame, run_every=PLAY_SECONDS if playing else None)
    with shown_errors():
        part(video, bundle, c, digest, view)
    with shown_errors():
        show_video_export(video, c, digest)
