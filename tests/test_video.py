"""Clips: reading (OpenCV, Pillow for GIFs), errors, batched capture, the animated grid, the CLI.

Clips are written here with cv2.VideoWriter and Pillow, 64 x 48 pixels, and carry their frame
number as 8 black/white stripes (bit b of the number = stripe b), which survives lossy codecs and
resizing: decoded frames can be checked for which frame of the file they are.
"""

from __future__ import annotations

import io
import math
import re
import tempfile
from pathlib import Path

import cv2
import numpy as np
import pytest
import torch
from PIL import Image

import vizhooks as vz
from tests.helpers import run_cli
from vizhooks import video
from vizhooks.models.images import preprocess
from vizhooks.render.figures import colormap_lut, grid_layout, retile

W, H, FPS = 64, 48, 10


@pytest.fixture(autouse=True)
def _own_tempdir(tmp_path, monkeypatch):
    """Temporary files of this test in a folder of its own, so leftovers can be counted."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


def _leftovers() -> list[str]:
    return sorted(p.name for p in Path(tempfile.gettempdir()).iterdir() if p.name.startswith("vizhooks-video-"))


def _stripes(i: int, width: int = W, height: int = H) -> np.ndarray:
    frame = np.zeros((height, width, 3), np.uint8)
    step = width // 8
    for bit in range(8):
        if i >> bit & 1:
            frame[:, bit * step:(bit + 1) * step] = 255
    return frame


def _number(picture: Image.Image) -> int:
    """The frame number read back from the stripes (the middle of each stripe, any size)."""
    grey = np.asarray(picture.convert("L"), dtype=np.float64)
    w = grey.shape[1]
    value = 0
    for bit in range(8):
        lo, hi = round(bit * w / 8), round((bit + 1) * w / 8)
        if grey[:, lo + 1:hi - 1].mean() > 128:
            value |= 1 << bit
    return value


def _write(path: Path, n: int, fourcc: str = "mp4v", fps: float = FPS) -> Path:
    if fourcc == "gif":
        frames = [Image.fromarray(_stripes(i)) for i in range(n)]
        frames[0].save(path, save_all=True, append_images=frames[1:], duration=100, loop=0)
        return path
    writer = cv2.VideoWriter(str(path), cv2.CAP_FFMPEG, cv2.VideoWriter_fourcc(*fourcc), fps, (W, H))
    if not writer.isOpened():
        raise AssertionError(f"the pinned OpenCV cannot write {fourcc}: the clip-reading tests need it")
    for i in range(n):
        writer.write(_stripes(i))
    writer.release()
    return path


@pytest.fixture(scope="module")
def clips(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("clips")
    return {"short": _write(folder / "short.mp4", 10), "long": _write(folder / "long.mp4", 100)}


def _one_sentence(message: str) -> None:
    assert "\n" not in message and message.endswith("."), message
    assert not re.search(r"[.!?]\s+[A-Z]", message), f"more than one sentence: {message}"


# ----------------------------------------------------------------------------------------------
# reading


@pytest.mark.parametrize("name,fourcc", [("a.mp4", "mp4v"), ("a.avi", "MJPG"), ("a.webm", "VP80"),
                                         ("a.mov", "mp4v"), ("a.gif", "gif")])
def test_short_clip_gives_every_frame_in_order(tmp_path, name, fourcc):
    path = _write(tmp_path / name, 10, fourcc)
    clip = vz.video.read_clip(path)  # 10 frames < 48: all of them
    assert [_number(f) for f in clip.frames] == list(range(10))
    assert all(f.mode == "RGB" and f.size == (W, H) for f in clip.frames)
    assert clip.times == pytest.approx([i / FPS for i in range(10)])
    assert (clip.fps, clip.frame_count, clip.width, clip.height) == (pytest.approx(FPS), 10, W, H)
    assert clip.duration == pytest.approx(1.0)
    assert _leftovers() == []


def test_long_clip_is_sampled_evenly(clips):
    clip = vz.video.read_clip(clips["long"], max_frames=7)
    got = [_number(f) for f in clip.frames]
    assert len(got) == 7 and got[0] == 0 and got[-1] == 99
    for k, index in enumerate(got):  # evenly spaced: frame k is the one nearest k * 99 / 6
        assert abs(index - k * 99 / 6) <= 0.5, got
    assert clip.times == pytest.approx([i / FPS for i in got])
    assert clip.frame_count == 100 and clip.duration == pytest.approx(10.0)
    assert [_number(f) for f in vz.video.read_frames(clips["long"], max_frames=1)] == [0]
    assert len(vz.video.read_frames(clips["long"])) == video.DEFAULT_MAX_FRAMES == 48


def test_size_resizes_like_a_photo(clips):
    clip = vz.video.read_clip(clips["short"], size=32)
    assert {f.size for f in clip.frames} == {(43, 32)}  # shorter side 32, 64:48 kept (42.7 -> 43)
    assert [_number(f) for f in clip.frames] == list(range(10))
    assert (clip.width, clip.height) == (W, H)  # the file's size, not the resized one


def test_path_bytes_and_file_objects_agree(clips):
    data = clips["long"].read_bytes()
    with open(clips["long"], "rb") as fh:
        from_file = vz.video.read_frames(fh, max_frames=5)
    sources = [str(clips["long"]), clips["long"], data, bytearray(data), memoryview(data), io.BytesIO(data)]
    want = [np.asarray(f) for f in from_file]
    for source in sources:
        got = vz.video.read_frames(source, max_frames=5)
        assert len(got) == 5 and all(np.array_equal(np.asarray(a), b) for a, b in zip(got, want, strict=True))
    assert _leftovers() == []


def test_progress_is_reported_and_an_error_in_it_leaves_no_temp_file(clips):
    calls = []
    vz.video.read_clip(clips["long"].read_bytes(), max_frames=4, progress=lambda d, t: calls.append((d, t)))
    assert calls == [(1, 4), (2, 4), (3, 4), (4, 4)]

    def boom(done, total):
        assert _leftovers(), "the bytes should be in a temporary file while decoding"
        raise RuntimeError("stop")

    with pytest.raises(RuntimeError, match="stop"):
        vz.video.read_clip(clips["long"].read_bytes(), progress=boom)
    assert _leftovers() == []


@pytest.mark.parametrize("claimed,max_frames,want", [
    (12, 48, list(range(10))),  # the header over-counts by two: every frame there is
    (12, 4, [0, 3, 6, 9]),  # sampled again over the 10 frames there are
    (-1, 4, [0, 3, 6, 9]),  # no count in the header: counted by a first pass
    (0, 48, list(range(10))),
])
def test_a_wrong_or_missing_frame_count_in_the_header(clips, monkeypatch, claimed, max_frames, want):
    real = cv2.VideoCapture

    class Header:
        """OpenCV's capture, with the header's frame count replaced."""

        def __init__(self, *args):
            self._capture = real(*args)

        def get(self, prop):
            return float(claimed) if prop == cv2.CAP_PROP_FRAME_COUNT else self._capture.get(prop)

        def __getattr__(self, name):
            return getattr(self._capture, name)

    monkeypatch.setattr(cv2, "VideoCapture", Header)
    clip = vz.video.read_clip(clips["short"], max_frames=max_frames)
    assert [_number(f) for f in clip.frames] == want
    assert clip.frame_count == 10 and clip.times == pytest.approx([i / FPS for i in want])


def test_gif_through_pillow_when_opencv_cannot_open_it(tmp_path, monkeypatch):
    path = _write(tmp_path / "a.gif", 12, "gif")

    class Closed:
        def __init__(self, *args):
            pass

        def isOpened(self):
            return False

        def release(self):
            pass

    monkeypatch.setattr(cv2, "VideoCapture", Closed)
    clip = vz.video.read_clip(path.read_bytes(), max_frames=4)
    assert [_number(f) for f in clip.frames] == [0, 4, 7, 11]
    assert clip.times == pytest.approx([0.0, 0.4, 0.7, 1.1])  # 100 ms per frame, from the GIF
    assert (clip.frame_count, clip.duration, clip.fps) == (12, pytest.approx(1.2), pytest.approx(10.0))
    assert _leftovers() == []


# ----------------------------------------------------------------------------------------------
# errors


def _jpeg() -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (64, 48), (200, 10, 10)).save(buf, "JPEG")
    return buf.getvalue()


def _still_gif() -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (64, 48), (0, 90, 10)).save(buf, "GIF")
    return buf.getvalue()


def _cut(path: Path, fraction: float) -> bytes:
    data = path.read_bytes()
    return data[: int(len(data) * fraction)]


@pytest.mark.parametrize("make,needle", [
    (lambda c, t: b"", "empty"),
    (lambda c, t: np.random.default_rng(0).bytes(5000), "not a video"),
    (lambda c, t: _cut(c["long"], 1 / 3), "truncated"),
    (lambda c, t: _cut(_write(t / "cut.avi", 30, "MJPG"), 0.7), "only"),  # the header says 30 frames
    (lambda c, t: b"just some notes, not a video\n" * 40, "text file"),
    (lambda c, t: _jpeg(), "still picture (JPEG)"),
    (lambda c, t: _still_gif(), "one frame"),
], ids=["empty", "random", "truncated-mp4", "truncated-avi", "text", "jpeg", "still-gif"])
def test_bad_input_is_one_sentence_and_leaves_nothing(clips, tmp_path, make, needle):
    data = make(clips, tmp_path)
    renamed = tmp_path / "clip.mp4"
    renamed.write_bytes(data)
    for source in (data, renamed, io.BytesIO(data)):
        with pytest.raises(vz.video.InvalidVideoError) as info:
            vz.video.read_clip(source)
        assert isinstance(info.value, ValueError)
        _one_sentence(str(info.value))
        assert needle.lower() in str(info.value).lower()
        assert _leftovers() == []


def test_missing_file_and_folder(tmp_path):
    for source, needle in ((tmp_path / "nope.mp4", "no file"), (tmp_path, "folder")):
        with pytest.raises(vz.video.InvalidVideoError, match=needle) as info:
            vz.video.read_clip(source)
        _one_sentence(str(info.value))


def test_too_long_is_refused_from_the_header(clips, monkeypatch):
    monkeypatch.setattr(video, "MAX_VIDEO_SECONDS", 2)

    def no_decoding(*args, **kwargs):
        raise AssertionError("decoded a clip that is too long")

    monkeypatch.setattr(video, "_decode", no_decoding)
    with pytest.raises(vz.video.InvalidVideoError) as info:
        vz.video.read_clip(clips["long"].read_bytes())
    message = str(info.value)
    _one_sentence(message)
    assert "10.0 seconds" in message and "2 seconds" in message and "trim" in message
    assert _leftovers() == []


def test_too_large_is_refused_before_a_temp_file(clips, monkeypatch):
    monkeypatch.setattr(video, "MAX_VIDEO_MB", 0.001)  # 1048 bytes

    def no_temp_file(*args, **kwargs):
        raise AssertionError("wrote a temporary file for an input that is too large")

    monkeypatch.setattr(tempfile, "mkstemp", no_temp_file)
    data = clips["short"].read_bytes()
    for source in (data, clips["short"], io.BytesIO(data)):
        with pytest.raises(vz.video.InvalidVideoError, match="over the limit of 0.001 MB") as info:
            vz.video.read_clip(source)
        _one_sentence(str(info.value))


@pytest.mark.parametrize("kwargs", [{"max_frames": 0}, {"max_frames": True}, {"max_frames": 2.5},
                                    {"size": 5}, {"size": "big"}])
def test_bad_arguments(clips, kwargs):
    with pytest.raises(ValueError) as info:
        vz.video.read_clip(clips["short"], **kwargs)
    assert not isinstance(info.value, vz.video.InvalidVideoError)
    _one_sentence(str(info.value))


# ----------------------------------------------------------------------------------------------
# capturing

LAYERS = ["conv1", "layer1.0.relu", "layer2.0.conv1"]  # layer1.0.relu runs twice: "#2"


@pytest.fixture(scope="module")
def frames(clips) -> list[Image.Image]:
    return vz.video.read_frames(clips["long"], max_frames=7)


@pytest.mark.slow
@pytest.mark.parametrize("batch", [1, 3, 8])
def test_capture_frames_equals_one_capture_per_frame(resnet18, frames, batch):
    passes = []
    handle = resnet18.model.register_forward_hook(lambda *args: passes.append(1))
    try:
        acts, logits = video.capture_frames_with_output(resnet18, frames, LAYERS, size=64, batch=batch)
    finally:
        handle.remove()
    assert len(passes) == math.ceil(len(frames) / batch)  # one forward pass per batch
    assert vz.ops.hook_count(resnet18.model) == 0
    singles = [vz.capture(resnet18.model, resnet18.preprocess(f, 64), LAYERS, as_maps=True) for f in frames]
    assert list(acts) == list(singles[0]) == ["conv1", "layer1.0.relu", "layer1.0.relu#2", "layer2.0.conv1"]
    for key, tensor in acts.items():
        assert tensor.shape == (len(frames), *singles[0][key].shape[1:]) and tensor.device.type == "cpu"
        want = torch.cat([s[key] for s in singles])
        assert torch.allclose(tensor, want, rtol=1e-4, atol=1e-5), key  # batched convs: float rounding
    with torch.inference_mode():
        want_logits = torch.cat([resnet18.model(resnet18.preprocess(f, 64)) for f in frames])
    assert logits.shape == (len(frames), 1000)
    assert torch.allclose(logits, want_logits, rtol=1e-4, atol=1e-5)
    only = vz.video.capture_frames(resnet18, frames, ["conv1"], size=64, batch=batch)
    assert torch.equal(only["conv1"], acts["conv1"])


def test_plain_module_uses_imagenet_preprocessing_and_progress(frames):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1),
                                torch.nn.Flatten(), torch.nn.Linear(4, 3)).eval()
    calls = []
    acts = vz.video.capture_frames(model, frames, ["0"], size=32, batch=3, progress=lambda d, t: calls.append((d, t)))
    want = torch.cat([model[0](preprocess(f, 32)) for f in frames]).detach()
    assert torch.allclose(acts["0"], want, atol=1e-6)
    assert calls == [(3, 7), (6, 7), (7, 7)]


@pytest.mark.slow
def test_mixed_sizes_keep_frame_order_or_say_one_size(resnet18, frames):
    mixed = [f if i % 2 else f.resize((48, 64)) for i, f in enumerate(frames)]  # landscape, portrait, ...
    acts = vz.video.capture_frames(resnet18, mixed, ["avgpool"], size=64, batch=8)  # pooled: one size
    want = torch.cat([vz.capture(resnet18.model, resnet18.preprocess(f, 64), ["avgpool"], as_maps=True)["avgpool"]
                      for f in mixed])
    assert torch.allclose(acts["avgpool"], want, rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="one size") as info:
        vz.video.capture_frames(resnet18, mixed, ["conv1"], size=64)
    _one_sentence(str(info.value))
    assert vz.ops.hook_count(resnet18.model) == 0


@pytest.mark.parametrize("frames_arg,kwargs", [([], {}), (None, {"batch": 0}), (None, {"what": "middle"})])
def test_capture_bad_arguments(resnet18, frames, frames_arg, kwargs):
    with pytest.raises(ValueError) as info:
        vz.video.capture_frames(resnet18, frames if frames_arg is None else frames_arg, ["conv1"], size=64, **kwargs)
    _one_sentence(str(info.value))


# ----------------------------------------------------------------------------------------------
# the animated grid


def _acts(t: int = 5, c: int = 8, seed: int = 0) -> torch.Tensor:
    return torch.rand(t, c, 6, 7, generator=torch.Generator().manual_seed(seed))


def _gif_frames(data: bytes) -> list[np.ndarray]:
    im = Image.open(io.BytesIO(data))
    frames = []
    for i in range(im.n_frames):
        im.seek(i)
        frames.append(np.asarray(im.convert("RGB")))
    return frames


def _no_video_encoder(monkeypatch) -> None:
    class Closed:
        def __init__(self, *args):
            pass

        def isOpened(self):
            return False

        def release(self):
            pass

    monkeypatch.setattr(video, "_encode_pyav", lambda *args: None)
    monkeypatch.setattr(cv2, "VideoWriter", Closed)


def test_retile_draws_what_grid_layout_draws():
    for frame in _acts(3, 20):
        layout = grid_layout(frame, channels=9, order="mean", title="x")
        arr = frame.numpy()[layout.channels]
        lo, hi = arr.min(axis=(1, 2), keepdims=True), arr.max(axis=(1, 2), keepdims=True)
        assert np.array_equal(retile(layout, (arr - lo) / (hi - lo)), layout.labelled)
    with pytest.raises(ValueError, match="retile needs 9 maps"):
        retile(layout, np.zeros((8, 6, 7)))


@pytest.mark.parametrize("encoder", ["first", "opencv"])
def test_layer_video_decodes_to_one_frame_per_time_step(tmp_path, monkeypatch, encoder):
    if encoder == "opencv":  # OpenCV's own writer: 'avc1' if it has it, else 'vp09'
        monkeypatch.setattr(video, "_encode_pyav", lambda *args: None)
    acts = _acts(5, 8)
    data, mime, ext = vz.video.layer_video(acts, fps=4, channels=6, title="layer")
    assert (mime, ext) == ("video/mp4", "mp4")
    path = tmp_path / f"grid.{ext}"
    path.write_bytes(data)
    page = grid_layout(acts[0], channels=6, title="layer").levels
    capture = cv2.VideoCapture(str(path))
    frames = []
    while True:
        ok, frame = capture.read()
        if not ok:
            break
        frames.append(frame)
    capture.release()
    assert len(frames) == 5
    even = (page.shape[0] + page.shape[0] % 2, page.shape[1] + page.shape[1] % 2)
    assert {f.shape[:2] for f in frames} == {even}
    probe = cv2.VideoCapture(str(path))
    assert probe.get(cv2.CAP_PROP_FPS) == pytest.approx(4)
    codec = int(probe.get(cv2.CAP_PROP_FOURCC)).to_bytes(4, "little")
    probe.release()
    try:
        import av  # noqa: F401
        first = b"h264"  # PyAV's libx264
    except ImportError:
        first = None
    assert codec in ((b"h264", b"avc1", b"VP90") if encoder == "opencv" or first is None else (first,)), codec
    assert _leftovers() == []


def test_gif_fallback_scales_each_channel_over_the_whole_clip(monkeypatch):
    _no_video_encoder(monkeypatch)
    first = _acts(1, 8)[0]
    first[:, 0, 0] = 0.0  # every channel's minimum (0) and maximum are in frame 0
    acts = torch.stack([first, 0.5 * first, 0.25 * first + 0.1 * _acts(1, 8, seed=1)[0]])
    data, mime, ext = vz.video.layer_video(acts, fps=5, channels=8, cmap="magma")
    assert (mime, ext) == ("image/gif", "gif")
    got = _gif_frames(data)
    assert len(got) == 3
    lut = colormap_lut("magma")
    # Frame 0 holds each channel's extremes over the clip: it is exactly the photo grid of frame 0.
    assert np.array_equal(got[0], lut[grid_layout(first, channels=8).labelled])
    # Frame 1 is frame 0 at half strength: darker, not stretched to full contrast again (no flicker).
    assert not np.array_equal(got[1], got[0])
    arr = acts.numpy()
    lo, hi = arr.min(axis=(0, 2, 3), keepdims=True), arr.max(axis=(0, 2, 3), keepdims=True)
    layout = grid_layout(arr.mean(0), channels=8)
    for t in range(3):
        assert np.array_equal(got[t], lut[retile(layout, ((arr - lo) / (hi - lo))[t])])
    assert _leftovers() == []


def test_channels_and_order_are_chosen_from_the_whole_clip(monkeypatch):
    _no_video_encoder(monkeypatch)
    acts = _acts(4, 6) * 0.1
    acts[1:, 4] += 5.0  # channel 4: quiet in frame 0, the loudest over the clip
    assert int(acts[0].mean(dim=(1, 2)).argmax()) != 4
    data, _, _ = vz.video.layer_video(acts, channels=1, order="mean")
    layout = grid_layout(acts.numpy().mean(0), channels=1, order="mean")
    assert layout.channels == [4]
    arr = acts.numpy()[:, [4]]
    lo, hi = arr.min(axis=(0, 2, 3), keepdims=True), arr.max(axis=(0, 2, 3), keepdims=True)
    lut = colormap_lut("viridis")
    for t, frame in enumerate(_gif_frames(data)):
        assert np.array_equal(frame, lut[retile(layout, ((arr - lo) / (hi - lo))[t])])


@pytest.mark.parametrize("kwargs", [{"fps": 0}, {"fps": 500}, {"order": "size"}, {"channels": 0},
                                    {"cmap": "nope"}])
def test_layer_video_bad_arguments(kwargs):
    with pytest.raises(ValueError) as info:
        vz.video.layer_video(_acts(2, 3), **kwargs)
    assert "\n" not in str(info.value)
    with pytest.raises(ValueError, match="T, C, H, W"):
        vz.video.layer_video(_acts(2, 3)[0])


def test_frames_npz_round_trip():
    acts = {"conv1": _acts(3, 4), "layer1.0.relu#2": _acts(3, 2, seed=2)}
    times = [0.0, 0.5, 1.25]
    with np.load(io.BytesIO(video.frames_npz_bytes(acts, times))) as data:
        assert sorted(data.files) == sorted(["__times__", "conv1", "layer1.0.relu#2"])
        np.testing.assert_array_equal(data["__times__"], times)
        for name, tensor in acts.items():
            assert data[name].dtype == np.float32 and data[name].shape == tuple(tensor.shape)
            np.testing.assert_array_equal(data[name], tensor.numpy())
    with pytest.raises(ValueError, match="3 frames but 2 times"):
        video.frames_npz_bytes(acts, times[:2])


# ----------------------------------------------------------------------------------------------
# the command line


def _frame_count(path: Path) -> int:
    capture = cv2.VideoCapture(str(path))
    count = 0
    while capture.grab():
        count += 1
    capture.release()
    return count


@pytest.mark.slow
def test_cli_writes_one_video_per_layer_and_the_npz(clips, tmp_path, capsys, resnet18):
    out, npz = tmp_path / "out", tmp_path / "clip.npz"
    layers = ["layer1.0.conv1", "layer3.0.conv1"]
    code, stdout, err = run_cli(capsys, clips["long"], "--weights", "none", "--layers", *layers, "--size", "64",
                                "--frames", "6", "--fps", "4", "--channels", "4", "--out", out, "--npz", npz)
    assert code == 0, err
    assert sorted(p.name for p in out.iterdir()) == [f"{n}.mp4" for n in layers]
    assert stdout.split() == [str(out / f"{n}.mp4") for n in layers] + [str(npz)]
    assert all(_frame_count(out / f"{n}.mp4") == 6 for n in layers)
    assert "decoding: 6/6 frames" in err and "capturing: 6/6 frames" in err
    frames = vz.video.read_frames(clips["long"], max_frames=6)
    want = vz.video.capture_frames(resnet18, frames, layers, size=64)
    with np.load(npz) as data:
        np.testing.assert_allclose(data["__times__"], [_number(f) / FPS for f in frames])
        for n in layers:
            np.testing.assert_allclose(data[n], want[n].numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.slow
def test_cli_gif_is_a_clip_only_with_several_frames(tmp_path, capsys):
    animated = _write(tmp_path / "moving.gif", 4, "gif")
    still = tmp_path / "still.gif"
    still.write_bytes(_still_gif())
    code, stdout, err = run_cli(capsys, animated, "--weights", "none", "--layers", "conv1", "--size", "32",
                                "--out", tmp_path / "a")
    assert code == 0, err
    assert Path(stdout.strip()).name == "conv1.mp4" and _frame_count(Path(stdout.strip())) == 4
    code, stdout, err = run_cli(capsys, still, "--weights", "none", "--layers", "conv1", "--size", "32",
                                "--out", tmp_path / "b")
    assert code == 0, err
    assert Path(stdout.strip()).name == "conv1.png"


@pytest.mark.parametrize("content,extra,needle", [
    (b"just some notes, not a clip\n", [], "This is a text file, not a video"),
    (None, ["--norm", "layer"], "--norm layer applies to pictures"),
    (None, ["--frames", "0"], "--frames"),
    (None, ["--fps", "fast"], "--fps"),
])
def test_cli_bad_clip_exits_2_with_one_line(clips, tmp_path, capsys, content, extra, needle):
    clip = tmp_path / "clip.mp4"
    clip.write_bytes(clips["short"].read_bytes() if content is None else content)
    code, stdout, err = run_cli(capsys, clip, "--weights", "none", "--out", tmp_path / "o", *extra)
    assert code == 2 and stdout == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("vizhooks: error:") and needle in lines[0], err
    assert "Traceback" not in err and not (tmp_path / "o").exists()
    assert _leftovers() == []
