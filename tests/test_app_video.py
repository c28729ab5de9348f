"""The Video source through AppTest: a clip written here, every frame captured once in batches,
the slider and Play that never run the model again, the exports, and a bad clip."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from tests.helpers import ok, open_page

FRAMES = 6
LAYERS = ["conv1", "layer2.0.conv1"]


@pytest.fixture(scope="module")
def clip(tmp_path_factory) -> bytes:
    """An mp4 of FRAMES frames, 96 x 64, frame i a flat grey of 40 * i with a bar that moves."""
    path = tmp_path_factory.mktemp("clip") / "clip.mp4"
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"mp4v"), 4.0, (96, 64))
    assert writer.isOpened()
    for i in range(FRAMES):
        frame = np.full((64, 96, 3), 40 * i, np.uint8)
        frame[:, 10 * i:10 * i + 8] = 255
        writer.write(frame)
    writer.release()
    return path.read_bytes()


def _video_app(data: bytes, name: str = "clip.mp4", lang: str = "en", passes: list | None = None) -> AppTest:
    at = open_page(lang=lang, layers=",".join(LAYERS), size="128")
    at.radio(key="source").set_value("video").run()
    if passes is not None:
        passes.clear()  # the sample photo's pass, before the clip
    at.file_uploader(key="video_upload").set_value((name, data, "video/mp4"))
    return at.run()


@pytest.mark.slow
def test_clip_is_captured_once_in_batches_and_the_slider_runs_nothing(clip, forward_passes):
    at = _video_app(clip, passes=forward_passes)
    ok(at)
    # every frame through the model in batches of 8 (one pass here: 6 frames), never one by one
    assert forward_passes == [FRAMES]
    slider = at.slider(key="video_frame")
    assert (slider.min, slider.max, slider.value) == (0, FRAMES - 1, 0)
    captions = " ".join(c.value for c in at.caption)
    assert f"{FRAMES} of {FRAMES} frames" in captions and "Frame 1 of 6, at 0.00 s" in captions
    heads = [s.value for s in at.subheader]
    assert all(name in heads for name in LAYERS)
    grids = [i.proto.imgs[0] for i in at.image]
    before = [img.url for img in grids]

    slider.set_value(4).run()
    ok(at)
    assert forward_passes == [FRAMES]  # no forward pass for another frame
    assert "Frame 5 of 6, at 1.00 s" in " ".join(c.value for c in at.caption)
    after = [i.proto.imgs[0].url for i in at.image]
    assert after != before  # the grids of frame 5 are not those of frame 1

    at.radio(key="video_view").set_value("inspector").run()
    ok(at)
    at.slider(key="video_frame").set_value(2).run()
    ok(at)
    assert forward_passes == [FRAMES]


@pytest.mark.slow
def test_play_steps_through_frames_without_the_model(clip, forward_passes):
    at = _video_app(clip, passes=forward_passes)
    ok(at)
    play = at.button(key="video_play")
    assert play.label == "Play"
    play.click().run()
    ok(at)
    assert at.button(key="video_play").label == "Pause"
    assert at.session_state["video_playing"] is True
    assert at.slider(key="video_frame").value == 1  # the run that starts playing moves one frame on
    at.run()
    assert at.slider(key="video_frame").value == 2
    at.button(key="video_play").click().run()
    assert at.button(key="video_play").label == "Play"
    assert forward_passes == [FRAMES]


@pytest.mark.slow
def test_exports_movie_and_npz(clip, forward_passes):
    at = _video_app(clip, passes=forward_passes)
    ok(at)
    assert not at.get("video")
    at.button(key="video_make_movie").click().run()
    ok(at)
    assert forward_passes == [FRAMES]  # the movie is drawn from the captured maps
    labels = [b.proto.label for b in at.get("download_button")]
    assert any(label.startswith("Download the movie") for label in labels)
    assert "Download every frame's activations (.npz)" in labels
    assert at.get("video") or any(i.proto.imgs[0].url for i in at.image)  # a player (or the GIF fallback)


@pytest.mark.slow
def test_bad_clip_is_one_sentence_and_the_page_recovers(clip):
    at = _video_app(b"this is a text file, not a video\n" * 20, name="notes.mp4")
    assert not at.exception
    assert len(at.error) == 1 and at.error[0].value.startswith("This clip could not be used:")
    at.file_uploader(key="video_upload").set_value(("clip.mp4", clip, "video/mp4"))
    at.run()
    ok(at)
    assert at.slider(key="video_frame").max == FRAMES - 1


def test_chinese_video_page(clip):
    at = _video_app(clip, lang="zh")
    ok(at)
    captions = " ".join(c.value for c in at.caption)
    assert "第 1/6 帧" in captions
    assert at.button(key="video_play").label == "播放"


def test_no_clip_says_what_to_do():
    at = open_page()
    at.radio(key="source").set_value("video").run()
    ok(at)
    assert any("Upload a clip" in i.value for i in at.info)
